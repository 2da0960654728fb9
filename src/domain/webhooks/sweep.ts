import type { DeliveryQueue, DeliveryStore, JobEventOutbox, LowCreditsStore } from './ports.js';
import type { WebhookPublisher } from './publisher.js';
import { EVENT_JOB_STATUSES } from './types.js';

export interface WebhookSweeperDeps {
  outbox: Pick<JobEventOutbox, 'overdue'>;
  lowCredits: Pick<LowCreditsStore, 'overdue'>;
  deliveries: Pick<DeliveryStore, 'overdue'>;
  queue: DeliveryQueue;
  publisher: Pick<WebhookPublisher, 'publishJobRecord' | 'publishLowCredits'>;
  /** What the normal path may still be doing: left alone for this long. */
  graceMs?: number;
  batch?: number;
}

export interface WebhookSweepReport {
  jobEvents: number;
  lowCreditsEvents: number;
  requeued: number;
}

/**
 * What a crash (kill -9 of any process) can leave between a state change and its delivery, repaired:
 * events written but never published, deliveries due with no queue entry. Safe anywhere, any number of
 * times, concurrently: it calls the same idempotent steps as the normal path.
 */
export class WebhookSweeper {
  constructor(private readonly deps: WebhookSweeperDeps) {}

  async sweep(now = new Date()): Promise<WebhookSweepReport> {
    const before = new Date(now.getTime() - (this.deps.graceMs ?? 5_000));
    const batch = this.deps.batch ?? 100;
    const report: WebhookSweepReport = { jobEvents: 0, lowCreditsEvents: 0, requeued: 0 };
    for (const job of await this.deps.outbox.overdue(EVENT_JOB_STATUSES, before, batch)) {
      if (await this.deps.publisher.publishJobRecord(job)) report.jobEvents++;
    }
    for (const { accountId, event } of await this.deps.lowCredits.overdue(before, batch)) {
      await this.deps.publisher.publishLowCredits(accountId, event);
      report.lowCreditsEvents++;
    }
    const due = await this.deps.deliveries.overdue(before, now, batch);
    if (due.length) {
      const live = await this.deps.queue.queued(due.map((d) => d.id));
      for (const d of due.filter((x) => !live.has(x.id))) {
        await this.deps.queue.enqueue(d.id);
        report.requeued++;
      }
    }
    return report;
  }
}
