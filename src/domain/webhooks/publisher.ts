import type { JobRecord } from '../jobs/records.js';
import type { JobView } from '../jobs/types.js';
import type { DeliveryQueue, DeliveryStore, EndpointRecord, EndpointStore, JobEventOutbox, LowCreditsEvent, LowCreditsStore } from './ports.js';
import { deliveryIdOf, derivedEventId } from './signing.js';
import { jobEventType, type WebhookEventType } from './types.js';

export interface WebhookPublisherDeps {
  endpoints: Pick<EndpointStore, 'subscribers'>;
  deliveries: Pick<DeliveryStore, 'insertOnce'>;
  queue: Pick<DeliveryQueue, 'enqueue'>;
  outbox: JobEventOutbox;
  lowCredits: Pick<LowCreditsStore, 'markPublished'>;
  /** The job as GET /api/playground/images/{jobId} returns it, image URLs signed for `baseUrl`. */
  jobView: (job: JobRecord, baseUrl: string) => JobView;
  /** PUBLIC_BASE_URL: the base of image URLs when set (else each endpoint's own). */
  publicBaseUrl?: string;
  now?: () => Date;
}

/**
 * Turns an event written to the database (a final job still flagged, a `credits.low` recorded on the
 * account) into one delivery per subscribed endpoint, queued for the workers, then clears the record.
 * Every step is idempotent (event and delivery ids derive from the cause), so the normal path, a
 * retry after a crash and the sweep may all run it, in any order, and one delivery per endpoint results.
 */
export class WebhookPublisher {
  private readonly now: () => Date;

  constructor(private readonly deps: WebhookPublisherDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Publishes the job's event if it is final and unpublished; needs only its status to know which. */
  async publishJob(jobId: string): Promise<boolean> {
    const job = await this.deps.outbox.pending(jobId);
    return job ? this.publishJobRecord(job) : false;
  }

  async publishJobRecord(job: JobRecord): Promise<boolean> {
    const type = jobEventType(job.status);
    if (!type) return false;
    const eventId = derivedEventId(`job:${job.id}:${type}`);
    const timestamp = (job.completedAt ?? job.updatedAt).toISOString();
    await this.fanOut(job.accountId, type, eventId, (endpoint) => ({
      type,
      timestamp,
      data: this.deps.jobView(job, this.deps.publicBaseUrl ?? endpoint.baseUrl),
    }));
    // Guarded by the status announced: a job whose status changed meanwhile keeps its event due.
    await this.deps.outbox.markPublished(job.id, job.status);
    return true;
  }

  async publishLowCredits(accountId: string, event: LowCreditsEvent): Promise<void> {
    const body = { type: 'credits.low', timestamp: event.at.toISOString(), data: { credits: event.credits, threshold: event.threshold } };
    await this.fanOut(accountId, 'credits.low', event.eventId, () => body);
    await this.deps.lowCredits.markPublished(accountId, event.eventId);
  }

  /** `credits.recharge_failed`: one event per failed recharge trigger, however often its failure is retried. */
  async publishRechargeFailed(accountId: string, failure: { triggerId: string; credits: number; amount: number; currency: string; reason: string; at: Date }): Promise<void> {
    const eventId = derivedEventId(`recharge_failed:${failure.triggerId}`);
    const { credits, amount, currency, reason } = failure;
    const body = { type: 'credits.recharge_failed', timestamp: failure.at.toISOString(), data: { credits, amount, currency, reason } };
    await this.fanOut(accountId, 'credits.recharge_failed', eventId, () => body);
  }

  /**
   * `key.expiring` for a key whose expiry is near: one event per key and expiry (its id derives from
   * both), so a sweep that publishes it again after a crash adds no delivery.
   */
  async publishKeyExpiring(accountId: string, key: { id: string; name: string; prefix: string; expiresAt: Date }): Promise<void> {
    const expiresAt = key.expiresAt.toISOString();
    const body = { type: 'key.expiring', timestamp: this.now().toISOString(), data: { id: key.id, name: key.name, prefix: key.prefix, expiresAt } };
    await this.fanOut(accountId, 'key.expiring', derivedEventId(`key:${key.id}:expiring:${expiresAt}`), () => body);
  }

  private async fanOut(accountId: string, type: WebhookEventType, eventId: string, bodyFor: (endpoint: EndpointRecord) => object): Promise<void> {
    const subscribers = await this.deps.endpoints.subscribers(accountId, type);
    const now = this.now();
    await Promise.all(
      subscribers.map(async (endpoint) => {
        const id = deliveryIdOf(eventId, endpoint.id);
        await this.deps.deliveries.insertOnce({
          id,
          eventId,
          accountId,
          endpointId: endpoint.id,
          type,
          body: JSON.stringify(bodyFor(endpoint)),
          status: 'pending',
          attempts: [],
          createdAt: now,
          nextAttemptAt: now,
          lockedUntil: null,
        });
        // Also when it existed: a crash may have come between its insert and its enqueue. A second
        // queue entry finds it claimed or done and does nothing.
        await this.deps.queue.enqueue(id);
      }),
    );
  }
}
