import { randomBytes } from 'node:crypto';
import type { LowCreditsState, LowCreditsStore } from './ports.js';
import type { WebhookPublisher } from './publisher.js';

export interface LowCreditsAlertsDeps {
  store: LowCreditsStore;
  /**
   * Publishes an event once it is written. Absent in a process that runs no queue (the CLI): the
   * event stays recorded on the account and a worker's webhook sweep publishes it.
   */
  publisher?: Pick<WebhookPublisher, 'publishLowCredits'>;
  now?: () => Date;
  /** A failed publish: the event stays on the account and the sweep publishes it. */
  onBackgroundError?: (err: unknown) => void;
}

/**
 * `credits.low`, once per crossing: after a balance change leaves the balance below the account's
 * threshold while the alert is armed, one guarded update disarms it and writes the event (concurrent
 * charges race for it and one wins); a balance back at or above the threshold re-arms it. Both guards
 * also compare the current balance, so a late observer cannot act on a balance that has since moved
 * the other way (the change that moved it observes for itself).
 */
export class LowCreditsAlerts {
  constructor(private readonly deps: LowCreditsAlertsDeps) {}

  /** Called after every applied balance change with the balance after it (and the state, when read with it). */
  observe(accountId: string, balance: number, known?: LowCreditsState): Promise<void> | undefined {
    // Almost every charge leaves an armed alert above its threshold: decided here, with no promise made
    // (the lookup's path, issue 18).
    if (known && !crosses(balance, known)) return undefined;
    return this.act(accountId, balance, known);
  }

  private async act(accountId: string, balance: number, known?: LowCreditsState): Promise<void> {
    const state = known ?? (await this.deps.store.state(accountId));
    if (!state || !crosses(balance, state)) return;
    if (balance < state.threshold && state.armed) {
      const event = { eventId: `msg_${randomBytes(20).toString('base64url')}`, credits: balance, threshold: state.threshold, at: this.now() };
      if ((await this.deps.store.fire(accountId, balance, event)) && this.deps.publisher) {
        await this.deps.publisher.publishLowCredits(accountId, event).catch((err: unknown) => this.deps.onBackgroundError?.(err));
      }
    } else if (balance >= state.threshold && !state.armed) {
      await this.deps.store.rearm(accountId, balance);
    }
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}

/** Whether `balance` fires an armed alert (below its threshold) or re-arms a fired one (back at or above it). */
function crosses(balance: number, state: LowCreditsState): boolean {
  return balance < state.threshold ? state.armed : !state.armed;
}
