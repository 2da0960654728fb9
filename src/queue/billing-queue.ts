import type { Agenda } from 'agenda';
import { z } from 'zod';
import type { RechargeQueue } from '../domain/billing/ports.js';

/** One queue entry per automatic recharge (the account's marker says whether it is still due). */
export const RUN_RECHARGE = 'billing.recharge';
/** Periodic repair: purchases a crash left pending, recharges whose entry or grant was lost. */
export const SWEEP_BILLING = 'billing.sweep';

export const runRechargePayload = z.object({ accountId: z.string().regex(/^[0-9a-f]{24}$/), triggerId: z.string().regex(/^rch_[0-9a-f]{24}$/) });
export type RunRechargePayload = z.infer<typeof runRechargePayload>;

/** Recharges on the process's one Agenda instance (the image queue's), so an enqueue wakes a local worker. */
export class AgendaRechargeQueue implements RechargeQueue {
  constructor(private readonly agenda: Agenda) {}

  async enqueue(accountId: string, triggerId: string): Promise<void> {
    await this.agenda.now<RunRechargePayload>(RUN_RECHARGE, { accountId, triggerId });
  }
}
