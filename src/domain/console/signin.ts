import { createHash } from 'node:crypto';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { LinkTokens } from '../links/service.js';
import type { PasswordHasher } from './passwords.js';
import { MAX_PASSWORD_LENGTH } from './passwords.js';
import type { ThrottleStore, UserRecord, UserStore } from './records.js';
import type { ClientMeta, SessionCaller, SessionRecordLike, SessionService } from './sessions.js';

export interface ThrottlePolicy {
  /** Failures of one email within the window before it is locked (the contract: 5 in 15 minutes). */
  maxFailuresPerEmail: number;
  /** Failures from one IP address within the window before it is locked (many emails, one client). */
  maxFailuresPerIp: number;
  windowMs: number;
  /** First lock-out; each further one doubles, up to maxLockMs. */
  firstLockMs: number;
  maxLockMs: number;
}

export const DEFAULT_THROTTLE: ThrottlePolicy = {
  maxFailuresPerEmail: 5,
  maxFailuresPerIp: 30,
  windowMs: 15 * 60_000,
  firstLockMs: 60_000,
  maxLockMs: 60 * 60_000,
};

export type SignInResult =
  | { ok: true; token: string; caller: SessionCaller }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number }
  /** The password was right and the user has a second factor: `challenge` (a cookie, not a session) awaits the code. */
  | { ok: false; reason: 'second_factor'; challenge: string };

/** A password checked outside sign-in, under its throttle. */
export type PasswordCheckResult = { ok: true } | { ok: false; reason: 'invalid' } | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

/** The second step of a sign-in: the challenge expired, was used, or never existed. */
export type SecondFactorResult = SignInResult | { ok: false; reason: 'expired' };

/** The user's second factor (src/domain/identity/two-factor.ts). */
export interface SecondFactor {
  isEnabled(userId: string): Promise<boolean>;
  /** A current authenticator code or an unused recovery code, accepted once. */
  verify(userId: string, code: unknown): Promise<boolean>;
}

/** How long the code may take after the password. */
const CHALLENGE_MS = 10 * 60_000;

/**
 * Email + password sign-in. The answer and its timing do not tell whether the email exists: an
 * unknown email is checked against a stand-in hash at the same cost. Every attempt is audited with IP
 * and user agent (never the password); repeated failures lock the email, and the client's IP, for a
 * growing period.
 */
export class SignInService {
  private standIn?: Promise<string>;
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      users: Pick<UserStore, 'findByEmail' | 'findById'>;
      hasher: PasswordHasher;
      sessions: SessionService;
      throttle: ThrottleStore;
      audit: AuditStore;
      host: string;
      /** Without it, no user is asked for a second factor. */
      secondFactor?: { check: SecondFactor; challenges: Pick<LinkTokens, 'issue' | 'peek' | 'consume'> };
      policy?: ThrottlePolicy;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  async signIn(email: unknown, password: unknown, meta: ClientMeta): Promise<SignInResult> {
    const policy = this.deps.policy ?? DEFAULT_THROTTLE;
    const address = typeof email === 'string' ? email.trim().toLowerCase().slice(0, 254) : '';
    const secret = typeof password === 'string' ? password.slice(0, MAX_PASSWORD_LENGTH * 4) : '';
    const subjects = [`email:${digest(address)}`, ...(meta.ip ? [`ip:${meta.ip}`] : [])];
    const now = this.now();

    // The attempt is counted before the password is checked (one guarded update per subject), so a
    // burst cannot be judged past the limit, and a refused attempt costs no hash.
    const refusedFor = await this.reserve(subjects, now, policy);
    if (refusedFor > 0) {
      await this.audit('console.sign_in_failed', null, address, meta, { reason: 'throttled' });
      return { ok: false, reason: 'throttled', retryAfterSeconds: refusedFor };
    }

    let user: UserRecord | null;
    let valid: boolean;
    try {
      user = address ? await this.deps.users.findByEmail(address) : null;
      // Same work whether or not the email exists.
      valid = await this.deps.hasher.verify(user?.passwordHash ?? (await this.standInHash()), secret);
    } catch (err) {
      await Promise.all(subjects.map((s) => this.deps.throttle.release(s)));
      throw err;
    }
    if (!user || !valid || secret === '') {
      await Promise.all(subjects.map((s) => this.judgedWrong(s, now, policy)));
      await this.audit('console.sign_in_failed', user?.accountId ?? null, address, meta, { reason: user ? 'wrong_password' : 'unknown_email' });
      return { ok: false, reason: 'invalid' };
    }
    const second = this.deps.secondFactor;
    if (second && (await second.check.isEnabled(user.id))) {
      // Not a session: a single-use challenge that opens no page. The failures stay counted until the
      // code is right too, so knowing the password does not reset the count of wrong codes.
      await Promise.all(subjects.map((s) => this.deps.throttle.release(s)));
      const { token: challenge } = await second.challenges.issue('second_factor', { userId: user.id, email: user.email }, CHALLENGE_MS);
      return { ok: false, reason: 'second_factor', challenge };
    }
    return this.succeed(user, subjects, meta, {});
  }

  /**
   * The code after the password: an authenticator code or a recovery code. Wrong codes count as failed
   * sign-ins of the email and the address (the same throttle as passwords); a right one uses the
   * challenge (one guarded update) and starts the session.
   */
  async completeSecondFactor(challenge: unknown, code: unknown, meta: ClientMeta): Promise<SecondFactorResult> {
    const second = this.deps.secondFactor;
    const pending = second ? await second.challenges.peek('second_factor', challenge) : { ok: false as const };
    if (!second || !pending.ok) return { ok: false, reason: 'expired' };
    const userId = String(pending.record.payload.userId);
    const user = await this.deps.users.findById(userId);
    if (!user) return { ok: false, reason: 'expired' };
    const policy = this.deps.policy ?? DEFAULT_THROTTLE;
    const subjects = [`email:${digest(user.email)}`, ...(meta.ip ? [`ip:${meta.ip}`] : [])];
    const now = this.now();
    const refusedFor = await this.reserve(subjects, now, policy);
    if (refusedFor > 0) {
      await this.audit('console.sign_in_failed', user.accountId, user.email, meta, { reason: 'throttled', step: 'second_factor' });
      return { ok: false, reason: 'throttled', retryAfterSeconds: refusedFor };
    }
    let right: boolean;
    try {
      right = await second.check.verify(user.id, code);
    } catch (err) {
      await Promise.all(subjects.map((s) => this.deps.throttle.release(s)));
      throw err;
    }
    if (!right) {
      await Promise.all(subjects.map((s) => this.judgedWrong(s, now, policy)));
      await this.audit('console.sign_in_failed', user.accountId, user.email, meta, { reason: 'wrong_code', userId: user.id });
      return { ok: false, reason: 'invalid' };
    }
    if (!(await second.challenges.consume('second_factor', challenge)).ok) {
      await Promise.all(subjects.map((s) => this.deps.throttle.release(s)));
      return { ok: false, reason: 'expired' };
    }
    return this.succeed(user, subjects, meta, { secondFactor: true });
  }

  /**
   * A password check that is not a sign-in but must not be a way around its throttle (the sign-up
   * password asked when a verification link is opened in another browser): counted for the email and
   * the client's address exactly as a sign-in, and audited as a failed one (`step` says where).
   */
  async checkPassword(email: string, meta: ClientMeta, step: string, check: () => Promise<boolean>): Promise<PasswordCheckResult> {
    const policy = this.deps.policy ?? DEFAULT_THROTTLE;
    const subjects = [`email:${digest(email)}`, ...(meta.ip ? [`ip:${meta.ip}`] : [])];
    const now = this.now();
    const refusedFor = await this.reserve(subjects, now, policy);
    if (refusedFor > 0) {
      await this.audit('console.sign_in_failed', null, email, meta, { reason: 'throttled', step });
      return { ok: false, reason: 'throttled', retryAfterSeconds: refusedFor };
    }
    let right: boolean;
    try {
      right = await check();
    } catch (err) {
      await Promise.all(subjects.map((s) => this.deps.throttle.release(s)));
      throw err;
    }
    if (!right) {
      await Promise.all(subjects.map((s) => this.judgedWrong(s, now, policy)));
      await this.audit('console.sign_in_failed', null, email, meta, { reason: 'wrong_password', step });
      return { ok: false, reason: 'invalid' };
    }
    await Promise.all([this.deps.throttle.forgive(subjects[0]!), ...subjects.slice(1).map((s) => this.deps.throttle.release(s))]);
    return { ok: true };
  }

  private async succeed(user: UserRecord, subjects: string[], meta: ClientMeta, details: Record<string, unknown>): Promise<SignInResult> {
    // The email's failures are forgotten; the address only gets this attempt back.
    await Promise.all([this.deps.throttle.forgive(subjects[0]!), ...subjects.slice(1).map((s) => this.deps.throttle.release(s))]);
    // The session starts in the account the user was created in while they are still a member of it, else in their first.
    const accountId = user.memberships.find((m) => m.accountId === user.accountId)?.accountId ?? user.memberships[0]?.accountId;
    if (!accountId) {
      await this.audit('console.sign_in_failed', user.accountId, user.email, meta, { reason: 'no_account' });
      return { ok: false, reason: 'invalid' };
    }
    const { token, caller } = await this.deps.sessions.start({ ...user, accountId }, meta);
    await this.audit('console.signed_in', accountId, user.email, meta, { userId: user.id, ...details });
    return { ok: true, token, caller };
  }

  /** Sign-out: the session is deleted on the server. */
  async signOut(token: string, meta: ClientMeta): Promise<void> {
    const ended: SessionRecordLike | null = await this.deps.sessions.end(token);
    if (ended) await this.audit('console.signed_out', ended.accountId, ended.email, meta, { userId: ended.userId });
  }

  /** Audits sessions a user ended from the console (their other browsers). */
  recordSessionsEnded(accountId: string, entry: AuditActor & { userAgent?: string; details: Record<string, unknown> }): Promise<void> {
    return this.deps.audit.record({ ...entry, event: 'console.session_ended', accountId }, this.now());
  }

  /** Reserves an attempt of every subject; 0, or the seconds to wait (nothing stays reserved then). */
  private async reserve(subjects: string[], now: Date, policy: ThrottlePolicy): Promise<number> {
    const windowStart = new Date(now.getTime() - policy.windowMs);
    const results = await Promise.all(subjects.map((s) => this.deps.throttle.reserve(s, now, windowStart, maxFor(s, policy))));
    let wait = 0;
    for (const r of results) {
      if (r.reserved) continue;
      const { lockedUntil, lockouts } = r.state;
      // Locked: until the lock ends. Full of attempts still being judged: the lock their failure
      // would bring.
      const ms = lockedUntil && lockedUntil > now ? lockedUntil.getTime() - now.getTime() : lockMs(lockouts, policy);
      wait = Math.max(wait, Math.ceil(ms / 1000));
    }
    if (wait > 0) await Promise.all(subjects.filter((_, i) => results[i]!.reserved).map((s) => this.deps.throttle.release(s)));
    return wait;
  }

  private async judgedWrong(subject: string, now: Date, policy: ThrottlePolicy): Promise<void> {
    const state = await this.deps.throttle.judgedWrong(subject);
    if (state && state.failures >= maxFor(subject, policy)) {
      await this.deps.throttle.lock(subject, now, new Date(now.getTime() + lockMs(state.lockouts, policy)));
    }
  }

  private standInHash(): Promise<string> {
    return (this.standIn ??= this.deps.hasher.hash(`stand-in ${Math.random()}`));
  }

  private audit(event: 'console.signed_in' | 'console.sign_in_failed' | 'console.signed_out', accountId: string | null, email: string, meta: ClientMeta, details: Record<string, unknown>) {
    return this.deps.audit.record(
      { event, accountId, actor: email ? `console:${email}` : 'console:(no email)', ip: meta.ip, host: this.deps.host, userAgent: meta.userAgent.slice(0, 300), details },
      this.now(),
    );
  }
}

function maxFor(subject: string, policy: ThrottlePolicy): number {
  return subject.startsWith('email:') ? policy.maxFailuresPerEmail : policy.maxFailuresPerIp;
}

/** The next lock-out's length: the first, doubled for each one before, at most maxLockMs. */
function lockMs(lockouts: number, policy: ThrottlePolicy): number {
  return Math.min(policy.maxLockMs, policy.firstLockMs * 2 ** lockouts);
}

function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}
