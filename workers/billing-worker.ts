import type { Agenda, Job } from 'agenda';
import type { Logger } from '../src/domain/logger.js';
import { RUN_RECHARGE, SWEEP_BILLING, runRechargePayload } from '../src/queue/billing-queue.js';
import type { BillingWork } from './services.js';

/** A purchase or recharge this long untouched is taken as lost by a crash (the sweep finishes it). */
const STALE_PURCHASE_MS = 60_000;
const STALE_RECHARGE_MS = 5 * 60_000;

/**
 * The worker door for billing: a queue entry names an account's recharge; AutoRecharge charges the
 * saved card and grants or gives up. The sweep finishes purchases and recharges a crash left half-done.
 * No business rule lives here.
 */
export function defineBillingHandlers(agenda: Agenda, billing: Pick<BillingWork, 'autoRecharge' | 'fulfilment'>, log: Logger): void {
  agenda.define(
    RUN_RECHARGE,
    async (job: Job<unknown>) => {
      const parsed = runRechargePayload.safeParse(job.attrs.data);
      if (!parsed.success) {
        log.error({ entry: String(job.attrs._id), data: job.attrs.data }, 'dropping malformed recharge queue entry');
        return;
      }
      const outcome = await billing.autoRecharge.run(parsed.data.accountId, parsed.data.triggerId);
      if (outcome === 'failed') log.info({ ...parsed.data }, 'automatic recharge failed and was turned off');
      if (outcome === 'canceled') log.info({ ...parsed.data }, 'automatic recharge was turned off before it was sent: nothing charged');
    },
    // A Stripe outage or a database fault: tried again later (the idempotency key keeps it one PaymentIntent).
    { concurrency: 4, lockLifetime: 120_000, removeOnComplete: true, backoff: (ctx) => [5_000, 30_000, 120_000][ctx.attempt - 1] ?? null },
  );

  agenda.define(
    SWEEP_BILLING,
    async () => {
      const now = Date.now();
      // Each sweep runs whatever the other's outcome: a purchase that cannot be finished holds up no recharge.
      const [purchases, recharges] = await Promise.allSettled([
        billing.fulfilment.sweep(new Date(now - STALE_PURCHASE_MS)),
        billing.autoRecharge.sweep(new Date(now - STALE_RECHARGE_MS)),
      ]);
      for (const r of [purchases, recharges]) if (r.status === 'rejected') log.error({ err: r.reason }, 'billing sweep failed');
      const finished = { purchases: purchases.status === 'fulfilled' ? purchases.value : 0, recharges: recharges.status === 'fulfilled' ? recharges.value : 0 };
      if (finished.purchases + finished.recharges > 0) log.info(finished, 'billing sweep finished half-done purchases');
    },
    { concurrency: 1, lockLifetime: 120_000 },
  );
}

/** One recurring sweep entry shared by all workers. */
export async function scheduleBillingSweep(agenda: Agenda, everyMs: number): Promise<void> {
  await agenda.every(everyMs, SWEEP_BILLING, undefined, { skipImmediate: true });
}
