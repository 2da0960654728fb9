import { isAppError } from '../errors.js';
import type { DomainMetrics } from '../metrics.js';
import type { AttemptResult, DeliveryRecord, DeliveryStore, EndpointStore, HostResolver, SendOutcome, WebhookTransport } from './ports.js';
import { signedHeaders } from './signing.js';
import { allowedAddresses } from './url-policy.js';

export interface WebhookDelivererDeps {
  deliveries: Pick<DeliveryStore, 'claim' | 'record'>;
  endpoints: Pick<EndpointStore, 'find' | 'disable'>;
  transport: WebhookTransport;
  resolve: HostResolver;
  allowPrivate: boolean;
  /** Delays before each retry (WEBHOOK_RETRY_SCHEDULE), in ms. */
  scheduleMs: readonly number[];
  /** A 2xx within this acknowledges (the contract: 15 s). */
  timeoutMs: number;
  now?: () => Date;
  /** Told how each recorded attempt ended. */
  metrics?: Pick<DomainMetrics, 'webhookDelivery'>;
}

/** How an attempt ended, for the queue door. */
export type AttemptOutcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; at: Date; reason: string }
  | { kind: 'gave_up'; reason: string }
  /** Not due, already final, or held by another attempt: nothing was sent. */
  | { kind: 'skipped' };

/** The contract: a 2xx within 15 s acknowledges a delivery. */
export const WEBHOOK_TIMEOUT_MS = 15_000;

export const USER_AGENT = 'credit-gateway-webhooks/1';

/**
 * One delivery attempt: claim the delivery (a guarded update, so two queue entries never send at once),
 * check the endpoint's address again (DNS may have changed since registration) and connect only to the
 * address checked, sign, POST, record. A 2xx acknowledges; a 410 disables the endpoint; anything else
 * is retried on the schedule until it runs out.
 */
export class WebhookDeliverer {
  constructor(private readonly deps: WebhookDelivererDeps) {}

  async attempt(deliveryId: string): Promise<AttemptOutcome> {
    const now = this.now();
    // Held a little longer than an attempt can take, so a live attempt is never taken over.
    const lockUntil = new Date(now.getTime() + this.deps.timeoutMs + 15_000);
    const delivery = await this.deps.deliveries.claim(deliveryId, now, lockUntil);
    if (!delivery) return { kind: 'skipped' };
    const endpoint = await this.deps.endpoints.find(delivery.endpointId);
    if (!endpoint || endpoint.accountId !== delivery.accountId) return this.finish(delivery, lockUntil, { kind: 'error', error: 'endpoint deleted' }, 'final');
    if (endpoint.disabledAt) return this.finish(delivery, lockUntil, { kind: 'error', error: 'endpoint disabled (it answered 410 Gone)' }, 'final');

    let sent: SendOutcome;
    try {
      const url = new URL(endpoint.url);
      const [address] = await allowedAddresses(url, this.deps.resolve, this.deps.allowPrivate);
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signedHeaders(endpoint.secret, delivery.eventId, this.now(), delivery.body),
      };
      sent = await this.deps.transport.post(url, address, headers, delivery.body, this.deps.timeoutMs);
    } catch (err) {
      if (!isAppError(err)) throw err;
      sent = { kind: 'error', error: err.message };
    }
    if (sent.kind === 'answered' && sent.statusCode === 410) {
      await this.deps.endpoints.disable(endpoint.id, this.now());
      return this.finish(delivery, lockUntil, sent, 'final');
    }
    return this.finish(delivery, lockUntil, sent, 'retry');
  }

  private async finish(delivery: DeliveryRecord, lockUntil: Date, sent: SendOutcome, onFailure: 'retry' | 'final'): Promise<AttemptOutcome> {
    const at = this.now();
    const attempt = sent.kind === 'answered' ? { at, statusCode: sent.statusCode, error: null } : { at, statusCode: null, error: sent.error };
    const ok = sent.kind === 'answered' && sent.statusCode >= 200 && sent.statusCode < 300;
    // Retry k (1-based) waits schedule[k-1] after the attempt before it failed.
    const delay = onFailure === 'retry' ? this.deps.scheduleMs[delivery.attempts.length] : undefined;
    const result: AttemptResult = ok
      ? { attempt, status: 'succeeded', nextAttemptAt: null }
      : delay === undefined
        ? { attempt, status: 'failed', nextAttemptAt: null }
        : { attempt, status: 'pending', nextAttemptAt: new Date(at.getTime() + delay) };
    // A hold lost meanwhile (this attempt outlived it): the other attempt records its own outcome.
    if (!(await this.deps.deliveries.record(delivery.id, lockUntil, result))) return { kind: 'skipped' };
    const outcome: AttemptOutcome = ok
      ? { kind: 'delivered' }
      : result.nextAttemptAt
        ? { kind: 'retry', at: result.nextAttemptAt, reason: attempt.error ?? `HTTP ${attempt.statusCode}` }
        : { kind: 'gave_up', reason: attempt.error ?? `HTTP ${attempt.statusCode}` };
    this.deps.metrics?.webhookDelivery(outcome.kind);
    return outcome;
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}
