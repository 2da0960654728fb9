import type { JobRecord } from '../jobs/records.js';
import type { DeliveryAttempt, DeliveryStatus, WebhookEventType } from './types.js';

/** A stored endpoint (`webhookEndpoints`). */
export interface EndpointRecord {
  id: string;
  accountId: string;
  url: string;
  events: WebhookEventType[];
  /**
   * Kept as issued: HMAC signing needs the secret itself, so a hash would be useless, and encrypting it
   * with a key stored beside it (the database) would protect nothing.
   */
  secret: string;
  /** Base address of image URLs in job events: PUBLIC_BASE_URL, else the address the endpoint was registered through. */
  baseUrl: string;
  createdAt: Date;
  disabledAt: Date | null;
}

export interface EndpointStore {
  insert(endpoint: EndpointRecord): Promise<void>;
  listForAccount(accountId: string): Promise<EndpointRecord[]>;
  find(id: string): Promise<EndpointRecord | null>;
  /** Live (not disabled) endpoints of the account subscribed to `type`. */
  subscribers(accountId: string, type: WebhookEventType): Promise<EndpointRecord[]>;
  /** Deletes the account's endpoint; false when there is none with that id for that account. */
  delete(accountId: string, id: string): Promise<boolean>;
  disable(id: string, at: Date): Promise<void>;
}

/** A stored delivery (`webhookDeliveries`): one event to one endpoint; a resend is a new delivery. */
export interface DeliveryRecord {
  id: string;
  eventId: string;
  accountId: string;
  endpointId: string;
  type: WebhookEventType;
  /** The exact bytes signed and sent: the same on every attempt and resend. */
  body: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  createdAt: Date;
  /** Due time of the next attempt; null once final. */
  nextAttemptAt: Date | null;
  /** An attempt in flight holds the delivery until then (a crashed worker's hold expires). */
  lockedUntil: Date | null;
}

/** What an attempt's outcome writes. */
export interface AttemptResult {
  attempt: DeliveryAttempt;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
}

export interface DeliveryStore {
  /** Inserts unless a delivery with this id exists (publishing again is harmless); true when inserted. */
  insertOnce(delivery: DeliveryRecord): Promise<boolean>;
  find(id: string): Promise<DeliveryRecord | null>;
  /** Recent deliveries of the account, newest first. */
  recent(accountId: string, limit: number): Promise<DeliveryRecord[]>;
  /** Guarded: pending, due at `now`, not held. Holds it until `lockUntil` and returns it, or null. */
  claim(id: string, now: Date, lockUntil: Date): Promise<DeliveryRecord | null>;
  /** Records an attempt made under the hold `lockedUntil`; false when that hold was lost meanwhile. */
  record(id: string, lockedUntil: Date, result: AttemptResult): Promise<boolean>;
  /** Pending deliveries due at or before `dueBefore` and not held at `now` (the sweep's candidates). */
  overdue(dueBefore: Date, now: Date, limit: number): Promise<DeliveryRecord[]>;
}

/** The work queue of deliveries (Agenda, run by the workers). */
export interface DeliveryQueue {
  enqueue(deliveryId: string, at?: Date): Promise<void>;
  /** Which of these deliveries have a live queue entry (scheduled or running). */
  queued(deliveryIds: readonly string[]): Promise<Set<string>>;
}

/** Final jobs whose event is not yet published: the job was inserted with the flag set. */
export interface JobEventOutbox {
  /** The job, if it is final and its event still unpublished. */
  pending(jobId: string): Promise<JobRecord | null>;
  /** Final jobs with their event unpublished, last changed at or before `before`. */
  overdue(statuses: readonly string[], before: Date, limit: number): Promise<JobRecord[]>;
  /** The event of the job in `status` went out: clears the flag only while the job is still in that status. */
  markPublished(jobId: string, status: string): Promise<void>;
}

/** A `credits.low` event written with the account's change of alert state, until it is published. */
export interface LowCreditsEvent {
  eventId: string;
  credits: number;
  threshold: number;
  at: Date;
}

/** An account's `credits.low` state. */
export interface LowCreditsState {
  threshold: number;
  /** False after the alert fired, until the balance is back at or above the threshold. */
  armed: boolean;
}

export interface LowCreditsStore {
  state(accountId: string): Promise<LowCreditsState | null>;
  /**
   * Guarded: armed, threshold above `balance`, current balance at most `balance` (so it is below the
   * threshold now, whatever ran meanwhile). Disarms and records `event` in the same update.
   */
  fire(accountId: string, balance: number, event: LowCreditsEvent): Promise<boolean>;
  /** Guarded: disarmed, threshold at most `balance`, current balance at least `balance`. Re-arms. */
  rearm(accountId: string, balance: number): Promise<boolean>;
  /** Sets the threshold; armed iff the current balance is at or above it (setting it fires nothing). */
  setThreshold(accountId: string, threshold: number): Promise<LowCreditsState | null>;
  /** Accounts with an event written and not yet published, written at or before `before`. */
  overdue(before: Date, limit: number): Promise<{ accountId: string; event: LowCreditsEvent }[]>;
  /** Forgets the event once published (guarded on its id). */
  markPublished(accountId: string, eventId: string): Promise<void>;
}

/** Resolves a host name to every address it has (A and AAAA). */
export type HostResolver = (host: string) => Promise<string[]>;

/** The receiver's answer to one POST, or why there was none. */
export type SendOutcome = { kind: 'answered'; statusCode: number } | { kind: 'error'; error: string };

export interface WebhookTransport {
  /**
   * POSTs `body` to `url`, connecting only to `address` (already checked): a DNS answer that changed
   * since cannot redirect the request. Gives up after `timeoutMs`. Follows no redirects.
   */
  post(url: URL, address: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendOutcome>;
}
