/** Webhook events of the contract. `events` of an endpoint defaults to all of them. */
export const WEBHOOK_EVENT_TYPES = ['job.completed', 'job.failed', 'job.canceled', 'credits.low', 'key.expiring'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: unknown): value is WebhookEventType {
  return typeof value === 'string' && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

/**
 * The event a job's status announces, or null while the job is not final. Keyed by the status string
 * alone, so a final state added to jobs later (`canceled`) needs no change here: `job.<status>`.
 */
export function jobEventType(status: string): WebhookEventType | null {
  const type = `job.${status}`;
  return type !== 'job.queued' && type !== 'job.running' && isWebhookEventType(type) ? type : null;
}

/** Statuses of jobs that announce an event when they reach them (the outbox sweep looks for these). */
export const EVENT_JOB_STATUSES: readonly string[] = WEBHOOK_EVENT_TYPES.filter((t) => t.startsWith('job.')).map((t) => t.slice(4));

/** Default `credits.low` threshold of an account that never set one. */
export const DEFAULT_LOW_CREDITS_THRESHOLD = 10;

/** A registered endpoint as its owner sees it (never the secret, but on creation). */
export interface EndpointView {
  id: string;
  url: string;
  events: WebhookEventType[];
  createdAt: Date;
  /** Set when the endpoint answered 410 Gone: nothing more is sent to it. */
  disabledAt: Date | null;
}

export interface EndpointCreated extends Omit<EndpointView, 'disabledAt'> {
  /** `whsec_` + base64 of 32 random bytes; shown once. */
  secret: string;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One attempt to deliver: the receiver's status code, or why there was none. */
export interface DeliveryAttempt {
  at: Date;
  statusCode: number | null;
  error: string | null;
}

/** A delivery as the console lists it. */
export interface DeliveryView {
  id: string;
  /** The `webhook-id`: the same for every attempt and resend of one event. */
  eventId: string;
  endpointId: string;
  type: WebhookEventType;
  status: DeliveryStatus;
  createdAt: Date;
  attempts: DeliveryAttempt[];
  nextAttemptAt: Date | null;
}
