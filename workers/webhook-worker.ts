import type { Agenda, Job } from 'agenda';
import { UnreachableCaseError } from '../src/domain/errors.js';
import { inSpan } from '../src/tracing/context.js';
import type { Logger } from '../src/domain/logger.js';
import type { WebhookDeliverer } from '../src/domain/webhooks/deliverer.js';
import type { WebhookSweeper } from '../src/domain/webhooks/sweep.js';
import { DELIVER_WEBHOOK, SWEEP_WEBHOOKS, deliverWebhookPayload, type WebhookQueue } from '../src/queue/webhook-queue.js';

/** What the webhook handlers call. */
export interface WebhookHandlerDeps {
  deliverer: Pick<WebhookDeliverer, 'attempt'>;
  sweeper: Pick<WebhookSweeper, 'sweep'>;
  queue: Pick<WebhookQueue, 'enqueue'>;
}

/**
 * The worker door for webhooks: a queue entry names a delivery; the deliverer makes one attempt and
 * says when the next is due, which becomes a new entry at that time. Defined before the queue starts.
 * No business rule lives here.
 */
export function defineWebhookHandlers(agenda: Agenda, webhooks: WebhookHandlerDeps, opts: { concurrency: number; log: Logger }): void {
  const { log } = opts;
  agenda.define(
    DELIVER_WEBHOOK,
    async (job: Job<unknown>) => {
      const parsed = deliverWebhookPayload.safeParse(job.attrs.data);
      if (!parsed.success) {
        log.error({ entry: String(job.attrs._id), data: job.attrs.data }, 'dropping malformed webhook queue entry');
        return;
      }
      const { deliveryId, traceparent } = parsed.data;
      // In the trace of the event's cause; the request to the endpoint carries it on (traceparent).
      await inSpan('webhook.deliver', traceparent, { 'webhook.delivery.id': deliveryId }, async () => {
        const outcome = await webhooks.deliverer.attempt(deliveryId);
        switch (outcome.kind) {
          case 'delivered':
          case 'skipped':
            return;
          case 'retry':
            // Lost if this process dies right here: the delivery is still pending and due, so the sweep requeues it.
            await webhooks.queue.enqueue(deliveryId, outcome.at);
            return;
          case 'gave_up':
            log.info({ deliveryId, reason: outcome.reason }, 'webhook delivery failed for good');
            return;
          default:
            throw new UnreachableCaseError(outcome);
        }
      });
    },
    // An attempt waits up to 15 s on a receiver: the lock outlives it; a crashed attempt's delivery is
    // held (lockedUntil) no longer than this either, so the entry's retry can claim it.
    { concurrency: opts.concurrency, lockLimit: opts.concurrency, lockLifetime: 45_000, removeOnComplete: true, backoff: (ctx) => [1_000, 5_000, 30_000][ctx.attempt - 1] ?? null },
  );

  agenda.define(
    SWEEP_WEBHOOKS,
    async () => {
      const report = await webhooks.sweeper.sweep();
      if (Object.values(report).some((n) => n > 0)) log.info({ report }, 'webhook sweep published or requeued events');
    },
    { concurrency: 1, lockLifetime: 60_000 },
  );
}

/** One recurring sweep entry shared by all workers. */
export async function scheduleWebhookSweep(agenda: Agenda, everyMs: number): Promise<void> {
  await agenda.every(everyMs, SWEEP_WEBHOOKS, undefined, { skipImmediate: true });
}
