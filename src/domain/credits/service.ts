import { AppError, UnreachableCaseError, invalid } from '../errors.js';
import type { CreditBalances } from '../ports.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import { noMetrics, type DomainMetrics } from '../metrics.js';
import type { UsageTag } from '../usage/types.js';
import type { AccountRecord, AccountStore, ApplyResult, KeyCreditsOnAccount, RechargeState } from './records.js';
import { randomUUID } from 'node:crypto';
import { periodOfRefill } from '../keys/settings.js';
import { heldPeriod, keyChargeOpPrefix, refillPeriodsAt, type KeyCreditStore, type PendingReservation } from '../keys/credit-limit.js';
import type { ChargeHolder } from '../principal.js';
import type { KeyRefill } from '../keys/records.js';

export interface CreditServiceDeps {
  accounts: AccountStore;
  audit: AuditStore;
  /** Recorded on entries written by automatic operations (refunds): which process did it. */
  host: string;
  now?: () => Date;
  /**
   * Told of every applied balance change with the balance after it (and the account's `credits.low`
   * state when the store read it in the same update): the low-balance alert. Awaited, so its event is
   * written before the caller hears of the change; its failures are its own to report. Nothing to
   * await (the common case: the balance crossed nothing) is `undefined`, and costs the charge no promise.
   */
  onBalanceChanged?: (accountId: string, balance: number, lowCredits?: { threshold: number; armed: boolean }, recharge?: RechargeState) => Promise<void> | undefined;
  /** Told of every charge and refund of usage that applied (a replay under the same op id is not). */
  metrics?: Pick<DomainMetrics, 'creditsCharged' | 'creditsRefunded'>;
  /** Keys' credit limits (issue 24); without it no charge is held by a key. */
  keyCredits?: KeyCreditStore;
  /**
   * Capped keys' credits moved onto their accounts (issue 33; the accounts' store): a capped charge of
   * a key whose refill the caller knows is then one guarded update of the account, as a plain charge
   * is. Without it, every capped charge is reserved on the key first.
   */
  heldCredits?: KeyCreditsOnAccount;
  /** Failures of the bookkeeping done after a charge was answered (the key sweep repairs what they left). */
  onBackgroundError?: (err: unknown) => void;
}

/** How long a capped charge waits for another's move of the key's credits to reach the account. */
const MOVE_WAIT_MS = 2_000;

/** Why a refund happened, recorded on its audit entry. */
export interface RefundInfo {
  reason: string;
  keyId?: string | null;
  jobId?: string;
  index?: number;
  [k: string]: unknown;
}

/**
 * The only place balances change. Crash safety without transactions: every change is one guarded
 * update. An operation that may be sent again (a job's charge, an image's refund: retried after a
 * timeout, a crash, a redelivered job) carries an operation id that the same update records on the
 * account, so it applies at most once; voidOp settles one whose outcome a crash left unknown. The id
 * stays recorded until its owner has written the outcome down (the job) and calls settle, however
 * many other operations the account sees meanwhile. A one-shot change (opId null: a lookup's charge
 * and its immediate refund) records nothing.
 *
 * Usage metering rides on the same update: a charge or refund tagged with its service and source
 * counts itself on the account, so the counts agree with the balance whatever crashes or retries.
 */
export class CreditService implements CreditBalances {
  private readonly now: () => Date;
  private readonly metrics: Pick<DomainMetrics, 'creditsCharged' | 'creditsRefunded'>;
  /** Confirmations of capped keys' reservations still being written (see charge). */
  private readonly confirming = new Set<Promise<void>>();

  constructor(private readonly deps: CreditServiceDeps) {
    this.now = deps.now ?? (() => new Date());
    this.metrics = deps.metrics ?? noMetrics;
  }

  async createAccount(name: unknown, credits: unknown, actor: AuditActor): Promise<AccountRecord> {
    if (typeof name !== 'string' || name.trim() === '') throw invalid('name', 'name must be a non-empty string');
    if (name.trim().length > 200) throw invalid('name', 'name must be at most 200 characters');
    const amount = credits ?? 0;
    if (!isCount(amount)) throw invalid('credits', 'credits must be a non-negative integer');
    const now = this.now();
    const account = await this.deps.accounts.create(name.trim(), amount, now);
    await this.deps.audit.record({ ...actor, event: 'account.created', accountId: account.id, amount, details: { name: account.name } }, now);
    return account;
  }

  /**
   * Creates the account of a chosen id (a sign-up's) with no credits, once however often it is called
   * and from wherever. `account.created` is audited under `opId` by every call, so a call after a crash
   * between the two writes adds the entry that was missed and never a second one.
   */
  async createAccountWithId(accountId: string, name: unknown, opId: string, actor: AuditActor): Promise<AccountRecord> {
    if (typeof name !== 'string' || name.trim() === '') throw invalid('name', 'name must be a non-empty string');
    if (name.trim().length > 200) throw invalid('name', 'name must be at most 200 characters');
    const result = await this.deps.accounts.createWithId(accountId, name.trim(), this.now());
    if (!result) throw new Error(`not an account id: ${accountId}`);
    const { account } = result;
    await this.deps.audit.record({ ...actor, event: 'account.created', accountId: account.id, amount: 0, opId, details: { name: account.name } }, account.createdAt);
    return account;
  }

  async getAccount(accountId: string): Promise<AccountRecord | null> {
    return this.deps.accounts.find(accountId);
  }

  /** True when no account exists yet (first start). */
  isEmpty(): Promise<boolean> {
    return this.deps.accounts.isEmpty();
  }

  /**
   * Deducts `amount` (once per opId), counted as one call of `usage`, and returns the balance after it.
   * 402 when the balance is too low (nothing charged, nothing counted). The domain's ports (LookupCredits,
   * JobCredits) require `usage`; it is optional here only for tests of the balance rules alone.
   */
  charge(accountId: string, amount: number, opId: string | null, usage?: UsageTag, holder?: ChargeHolder): Promise<number> {
    try {
      assertPositive(amount);
    } catch (err) {
      return Promise.reject(err);
    }
    const keys = this.deps.keyCredits;
    // A key without a credit limit (almost every charge): the account's guarded update alone, no frame around it.
    if (!keys || !holder?.keyId || holder.creditLimit == null) return this.chargeAccount(accountId, amount, opId, usage);
    if (this.deps.heldCredits && keys.reserveAll && holder.creditRefill !== undefined) return this.chargeOnAccount(keys, holder.keyId, holder.creditRefill, accountId, amount, opId, usage);
    return this.chargeHeld(keys, holder.keyId, accountId, amount, opId, usage);
  }

  /**
   * A capped charge from the key's credits on its account: one guarded update takes the credits and
   * the key's share of them together (group-committed with the account's other charges). When the
   * account holds too few of the key's credits for the period the key is in, all that the key has
   * left moves onto the account (a reservation on the key, then the account under the same op id: see
   * KeyCreditsOnAccount) and the charge is tried again; when the key has none left, it is refused for
   * its limit. Every move takes at least one credit from the key, so this ends.
   */
  private async chargeOnAccount(keys: KeyCreditStore, keyId: string, refill: KeyRefill | null, accountId: string, amount: number, opId: string | null, usage?: UsageTag): Promise<number> {
    const now = this.now();
    const periods = refillPeriodsAt(now);
    let period = heldPeriod(periodOfRefill(refill, now));
    const started = Date.now();
    for (;;) {
      const result = await this.deps.accounts.apply(accountId, -amount, opId, usage && { service: usage.service, source: usage.source, at: now }, { held: { keyId, period } });
      if (result.kind !== 'key_short') return this.charged(accountId, amount, result, usage);
      const moved = await this.moveOnAccount(keys, keyId, accountId, periods, now);
      if (moved.kind === 'uncapped') return this.chargeAccount(accountId, amount, opId, usage);
      if (moved.kind === 'limit' && heldPeriod(moved.period) === period) {
        // Nothing left on the key, and too few of the period tried on the account. Unless another
        // charge's move is on its way there (it took the key's credits a moment ago), that is the limit.
        if (!moved.moving || Date.now() - started > MOVE_WAIT_MS) throw new AppError('key_credit_limit');
        await new Promise((resolve) => setImmediate(resolve));
      }
      // (A limit in another period: the caller's refill was stale; the key's credits of its period may cover it.)
      period = heldPeriod(moved.period);
    }
  }

  /** Moves what a key has left onto its account (see chargeOnAccount); its period, or why none moved. */
  private async moveOnAccount(keys: KeyCreditStore, keyId: string, accountId: string, periods: ReturnType<typeof refillPeriodsAt>, now: Date) {
    const op = `${keyChargeOpPrefix}${randomUUID()}`;
    const reserved = await keys.reserveAll!(keyId, op, periods, now);
    if (reserved.kind !== 'reserved') return reserved;
    const reservation = { op, amount: reserved.amount, period: reserved.period };
    let outcome: Awaited<ReturnType<KeyCreditsOnAccount['moveIn']>>;
    try {
      outcome = await this.deps.heldCredits!.moveIn(accountId, keyId, reserved.amount, heldPeriod(reserved.period), reserved.limit, op);
    } catch (err) {
      // The outcome is unknown (the database): settled now if it allows, else by the sweep, as a
      // process that died here leaves it.
      if (err instanceof AppError) await this.settleReservation({ ...reservation, keyId, accountId, at: now }).catch(() => undefined);
      throw err;
    }
    if (outcome === 'unknown_account') {
      await keys.release(keyId, reservation);
      throw new AppError('invalid_api_key');
    }
    // Voided: a sweep judged the move dead and gives the key its credits back; the next try moves them again.
    if (outcome !== 'voided') this.confirmLater(keyId, accountId, op, true);
    return { kind: 'moved' as const, period: reserved.period };
  }

  /** A charge held by its key's credit limit: reserved on the key, then charged to the account. */
  private async chargeHeld(keys: KeyCreditStore, keyId: string, accountId: string, amount: number, opId: string | null, usage?: UsageTag): Promise<number> {
    // A one-shot charge gets an op id too: the account must remember it until the key's reservation
    // is confirmed, so that a sweep can tell whether it applied.
    const op = opId ?? `${keyChargeOpPrefix}${randomUUID()}`;
    const now = this.now();
    const reserved = await keys.reserve(keyId, op, amount, refillPeriodsAt(now), now);
    if (reserved.kind === 'uncapped') return this.chargeAccount(accountId, amount, opId, usage);
    if (reserved.kind === 'limit') throw new AppError('key_credit_limit');
    const reservation = { op, amount, period: reserved.period };
    let balance: number;
    try {
      balance = await this.chargeAccount(accountId, amount, op, usage);
    } catch (err) {
      // Known not to have applied (refused, or voided by a sweep): the key gets its credits back now.
      // Anything else (the database) left the outcome unknown: the pending entry waits for the sweep.
      if (err instanceof AppError && err.code !== 'database_unavailable') await keys.release(keyId, reservation);
      else if (err instanceof AppError) await this.settleReservation({ ...reservation, keyId, accountId, at: now }).catch(() => undefined);
      throw err;
    }
    this.confirmLater(keyId, accountId, op, opId === null);
    return balance;
  }

  /**
   * After the account's charge applied, the key's reservation is confirmed, then (a one-shot charge)
   * the account may forget the op id: in the background, written with other charges' (the answer does
   * not depend on them, and two writes per charge would double what a capped key costs). In that
   * order: until the key's entry is gone the account must remember the id, so that the sweep, if this
   * process dies in between, finds the charge applied and keeps the key's credits spent.
   */
  private confirmLater(keyId: string, accountId: string, op: string, oneShot: boolean): void {
    const keys = this.deps.keyCredits!;
    const done: Promise<void> = keys
      .confirm(keyId, op)
      .then(() => (oneShot ? this.deps.accounts.settleSoon(accountId, op) : undefined))
      .catch((err: unknown) => this.deps.onBackgroundError?.(err))
      .finally(() => this.confirming.delete(done));
    this.confirming.add(done);
  }

  /** Waits until the reservations of every charge answered so far are confirmed (shutdown, tests). */
  async confirmed(): Promise<void> {
    while (this.confirming.size > 0) await Promise.all([...this.confirming]);
  }

  /**
   * Settles a reservation whose account charge has an unknown outcome (the sweep, or a charge answered
   * voided): voiding the op on the account decides it for good; voided gives the key its credits back,
   * already applied keeps them spent. Returns which.
   */
  async settleReservation(pending: PendingReservation): Promise<'released' | 'confirmed'> {
    const keys = this.deps.keyCredits;
    if (!keys) throw new Error('settleReservation needs keyCredits');
    const outcome = await this.voidOp(pending.accountId, pending.op);
    if (outcome === 'voided') await keys.release(pending.keyId, pending);
    else await keys.confirm(pending.keyId, pending.op);
    // A one-shot charge's id served only this decision; a job's stays for its job to settle.
    if (pending.op.startsWith(keyChargeOpPrefix)) await this.deps.accounts.settle(pending.accountId, pending.op);
    return outcome === 'voided' ? 'released' : 'confirmed';
  }

  private async chargeAccount(accountId: string, amount: number, opId: string | null, usage?: UsageTag): Promise<number> {
    const result = await this.deps.accounts.apply(accountId, -amount, opId, usage && { service: usage.service, source: usage.source, at: this.now() });
    return this.charged(accountId, amount, result, usage);
  }

  /** A charge's answer: its balance after it, or the refusal its outcome means. */
  private async charged(accountId: string, amount: number, result: ApplyResult, usage?: UsageTag): Promise<number> {
    const alert = result.kind === 'applied' ? this.observe(accountId, result, 'charge') : undefined;
    if (alert) await alert.catch(() => undefined);
    if (result.kind === 'applied' && usage) this.metrics.creditsCharged(usage.service, amount);
    switch (result.kind) {
      case 'applied':
      case 'already_applied':
        return result.balance;
      case 'insufficient':
        throw new AppError('insufficient_credits');
      case 'unknown_account':
        // A key of a vanished account: as good as no key.
        throw new AppError('invalid_api_key');
      case 'voided':
        // The sweep judged the request dead and voided its charge: nothing was taken, it may be retried.
        throw new AppError('database_unavailable');
      case 'key_short':
        // Only a charge held on the account (chargeOnAccount) is told this, and it handles it.
        throw new AppError('key_credit_limit');
      default:
        throw new UnreachableCaseError(result);
    }
  }

  /** Gives `amount` back (once per opId), audited, and counted as refunded credits of `usage`. */
  async refund(accountId: string, amount: number, opId: string | null, info: RefundInfo, usage?: UsageTag, actor?: AuditActor): Promise<void> {
    assertPositive(amount);
    const result = await this.deps.accounts.apply(accountId, amount, opId, usage && { ...usage, at: this.now() });
    if (result.kind === 'applied' && usage) this.metrics.creditsRefunded(usage.service, amount);
    await this.audited(result, 'credits.refunded', accountId, amount, opId, info, actor ?? { actor: 'system', ip: null, host: this.deps.host });
    // The key that paid gets them back too (a no-op for a key without a limit). After the account's
    // refund, and once per op on the key: a retried refund (same op) heals a crash in between.
    const keyId = typeof info.keyId === 'string' ? info.keyId : null;
    if (keyId && this.deps.keyCredits && (result.kind === 'applied' || (result.kind === 'already_applied' && opId !== null))) {
      // To the key's credits on the account when it holds some (their next charge draws on them), else to the key.
      if (!(await this.deps.heldCredits?.refundIn(accountId, keyId, amount, opId))) await this.deps.keyCredits.refund(keyId, opId, amount);
    }
  }

  /** Adds credits (admin); once per opId, audited. Not usage. */
  async grant(accountId: string, amount: unknown, opId: string, actor: AuditActor): Promise<number> {
    if (!isCount(amount) || amount === 0) throw invalid('amount', 'amount must be a positive integer');
    const result = await this.deps.accounts.apply(accountId, amount, opId);
    return this.audited(result, 'credits.granted', accountId, amount, opId, null, actor);
  }

  /**
   * Credits paid for (a Checkout Session, an automatic recharge): once per opId, however often the
   * payment's events arrive, audited `credits.purchased`. Like a grant, the op id stays recorded.
   */
  async purchase(accountId: string, amount: number, opId: string, details: Record<string, unknown>, actor: AuditActor): Promise<number> {
    assertPositive(amount);
    const result = await this.deps.accounts.apply(accountId, amount, opId);
    return this.audited(result, 'credits.purchased', accountId, amount, opId, details, actor);
  }

  /**
   * Takes back the credits of a refunded payment, once per opId (one per refund), audited
   * `credits.payment_refunded`. The balance may go below zero: charges get 402 until it is positive.
   */
  async takeBack(accountId: string, amount: number, opId: string, details: Record<string, unknown>, actor: AuditActor): Promise<number> {
    assertPositive(amount);
    const result = await this.deps.accounts.apply(accountId, -amount, opId, undefined, { mayGoNegative: true });
    return this.audited(result, 'credits.payment_refunded', accountId, amount, opId, details, actor);
  }

  /**
   * Makes sure `opId` can never apply from now on. 'already_applied' means it did (for a charge: the
   * credits were taken). Used to settle an operation whose outcome a crash left unknown.
   */
  async voidOp(accountId: string, opId: string): Promise<'voided' | 'already_applied'> {
    const result = await this.deps.accounts.voidOp(accountId, opId);
    // An account that no longer exists cannot be charged later either.
    return result === 'unknown_account' ? 'voided' : result;
  }

  /** The outcome of `opId` is recorded by its owner: the account need not remember the id any longer. */
  settle(accountId: string, opId: string): Promise<void> {
    return this.deps.accounts.settle(accountId, opId);
  }

  balances(accountIds: readonly string[]): Promise<(number | null)[]> {
    return this.deps.accounts.balances(accountIds);
  }

  /**
   * The low-balance alert's promise when it has work to do (the caller awaits it), else undefined.
   * Only a charge may start an automatic recharge: a refunded payment or a grant that leaves the
   * balance below the threshold charges no card (the recharge state is then `null`, none may start).
   */
  private observe(accountId: string, result: Extract<ApplyResult, { kind: 'applied' }>, change: 'charge' | 'credit'): Promise<void> | undefined {
    return this.deps.onBalanceChanged?.(accountId, result.balance, result.lowCredits, change === 'charge' ? result.recharge : null);
  }

  private async audited(
    result: ApplyResult,
    event: 'credits.granted' | 'credits.refunded' | 'credits.purchased' | 'credits.payment_refunded',
    accountId: string,
    amount: number,
    opId: string | null,
    details: Record<string, unknown> | null,
    actor: AuditActor,
  ): Promise<number> {
    const alert = result.kind === 'applied' ? this.observe(accountId, result, 'credit') : undefined;
    if (alert) await alert.catch(() => undefined);
    switch (result.kind) {
      case 'applied':
      case 'already_applied':
        // Written on the retry too (once per op id), so a crash between the update and the entry heals.
        await this.deps.audit.record({ ...actor, event, accountId, amount, opId, keyId: (details?.keyId as string | undefined) ?? null, details }, this.now());
        return result.balance;
      case 'insufficient':
        throw new Error(`a credit of ${amount} cannot be refused for insufficient balance`);
      case 'unknown_account':
        throw invalid('account', `account ${accountId} does not exist`);
      case 'voided':
        // Only job charges are ever voided.
        throw new Error(`${event} ${opId} was voided`);
      case 'key_short':
        throw new Error(`${event} is not held by a key`);
      default:
        throw new UnreachableCaseError(result);
    }
  }
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function assertPositive(amount: number): void {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new Error(`credit amount must be a positive integer, got ${amount}`);
}
