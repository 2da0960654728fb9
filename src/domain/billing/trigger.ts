import { randomBytes } from 'node:crypto';
import type { RechargeState } from '../credits/records.js';
import type { BillingAccountStore, RechargeQueue } from './ports.js';

/** The UTC day (`YYYY-MM-DD`) automatic recharges are counted on, for AUTO_RECHARGE_MAX_PER_DAY. */
export const rechargeDay = (at: Date): string => at.toISOString().slice(0, 10);

export interface RechargeTriggerDeps {
  accounts: Pick<BillingAccountStore, 'claimRecharge'>;
  queue: RechargeQueue;
  /** False without STRIPE_SECRET_KEY: nothing could charge the card. */
  enabled: boolean;
  maxPerDay: number;
  now?: () => Date;
}

/**
 * The request's part of automatic recharge: a charge that leaves the balance below the account's
 * threshold claims the account's one recharge slot (a guarded marker, counted per UTC day: concurrent
 * charges race for it and one wins) and queues it for the workers. Nothing else happens in the request.
 */
export class RechargeTrigger {
  constructor(private readonly deps: RechargeTriggerDeps) {}

  /** After an applied balance change; nothing to do (almost always) is decided without a promise. */
  observe(accountId: string, balance: number, state: RechargeState | undefined): Promise<void> | undefined {
    if (!this.deps.enabled || this.deps.maxPerDay === 0 || state === null || (state && balance >= state.threshold)) return undefined;
    return this.claim(accountId, balance);
  }

  private async claim(accountId: string, balance: number): Promise<void> {
    const at = this.deps.now?.() ?? new Date();
    const id = `rch_${randomBytes(12).toString('hex')}`;
    const claimed = await this.deps.accounts.claimRecharge(accountId, balance, { id, at, day: rechargeDay(at), maxPerDay: this.deps.maxPerDay });
    // Lost if this process dies here: the marker stays, and the sweep queues it again.
    if (claimed) await this.deps.queue.enqueue(accountId, id);
  }
}
