import { createHash } from 'node:crypto';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { PasswordHasher } from './passwords.js';
import { MAX_PASSWORD_LENGTH } from './passwords.js';
import type { ThrottleStore, UserStore } from './records.js';
import type { ClientMeta, ConsoleCaller, SessionRecordLike, SessionService } from './sessions.js';

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
  | { ok: true; token: string; caller: ConsoleCaller }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

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
      users: Pick<UserStore, 'findByEmail'>;
      hasher: PasswordHasher;
      sessions: SessionService;
      throttle: ThrottleStore;
      audit: AuditStore;
      host: string;
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

    const locked = await this.lockedFor(subjects, now);
    if (locked > 0) {
      await this.audit('console.sign_in_failed', null, address, meta, { reason: 'throttled' });
      return { ok: false, reason: 'throttled', retryAfterSeconds: locked };
    }

    const user = address ? await this.deps.users.findByEmail(address) : null;
    // Same work whether or not the email exists.
    const valid = await this.deps.hasher.verify(user?.passwordHash ?? (await this.standInHash()), secret);
    if (!user || !valid || secret === '') {
      await this.countFailure(subjects, now, policy);
      await this.audit('console.sign_in_failed', user?.accountId ?? null, address, meta, { reason: user ? 'wrong_password' : 'unknown_email' });
      return { ok: false, reason: 'invalid' };
    }
    await this.deps.throttle.clear(subjects[0]!);
    const { token, caller } = await this.deps.sessions.start(user, meta);
    await this.audit('console.signed_in', user.accountId, user.email, meta, { userId: user.id });
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

  private async lockedFor(subjects: string[], now: Date): Promise<number> {
    const states = await Promise.all(subjects.map((s) => this.deps.throttle.get(s)));
    const until = Math.max(0, ...states.map((s) => s?.lockedUntil?.getTime() ?? 0));
    return until > now.getTime() ? Math.ceil((until - now.getTime()) / 1000) : 0;
  }

  private async countFailure(subjects: string[], now: Date, policy: ThrottlePolicy): Promise<void> {
    const windowStart = new Date(now.getTime() - policy.windowMs);
    await Promise.all(
      subjects.map(async (subject) => {
        const state = await this.deps.throttle.fail(subject, now, windowStart);
        const max = subject.startsWith('email:') ? policy.maxFailuresPerEmail : policy.maxFailuresPerIp;
        if (state.failures >= max) {
          const lockMs = Math.min(policy.maxLockMs, policy.firstLockMs * 2 ** state.lockouts);
          await this.deps.throttle.lock(subject, new Date(now.getTime() + lockMs));
        }
      }),
    );
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

function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}
