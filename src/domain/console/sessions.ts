import { createHash, randomBytes } from 'node:crypto';
import type { Principal } from '../principal.js';
import type { Role } from '../team/permissions.js';
import type { SessionRecord, SessionStore } from './records.js';

/** A live session's user, before their membership of the session's account is checked. */
export interface SessionCaller {
  /** What the domain services receive: the account (the session's current one), the user, no key. */
  principal: Principal & { userId: string; keyId: null };
  email: string;
  /** The session's stored id (a hash; never the cookie's token). */
  sessionId: string;
  csrfToken: string;
}

/** The signed-in console user behind a request: a session whose user is a member of its current account. */
export interface ConsoleCaller extends SessionCaller {
  /** The user's role in the current account: what the console lets them do (src/domain/team/permissions.ts). */
  role: Role;
  /** Every account the user belongs to, by name (the account switcher), the current one included. */
  accounts: { id: string; name: string }[];
  /** The current account requires two-factor authentication and this user has not set it up. */
  mustSetUp2fa: boolean;
}

export interface ClientMeta {
  ip: string | null;
  userAgent: string;
}

/** What the edge needs to authenticate a console request. */
export interface SessionResolver {
  /** The caller of a session token, or null when it is unknown, expired or ended. */
  resume(token: string, meta: ClientMeta): Promise<ConsoleCaller | null>;
}

/** What a caller of end() learns of the session it ended. */
export type SessionRecordLike = Pick<SessionRecord, 'id' | 'userId' | 'accountId' | 'email'>;

export interface SessionLimits {
  idleMs: number;
  absoluteMs: number;
}

/**
 * Activity moves a session's idle expiry at most once a minute (one write a minute, not one per page),
 * and at most every quarter of the idle window when that is shorter: a request not written leaves an
 * expiry at least three quarters of the window away, so activity always extends a session in time.
 */
export function touchInterval(idleMs: number): number {
  return Math.min(60_000, Math.floor(idleMs / 4));
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * Server-side console sessions: a random 256-bit token in the cookie, only its SHA-256 stored; idle
 * and absolute expiry checked on every request and enforced by a TTL index; ending one deletes it.
 */
export class SessionService {
  private readonly now: () => Date;
  private readonly touchEveryMs: number;

  constructor(private readonly deps: { sessions: SessionStore; limits: SessionLimits; now?: () => Date }) {
    this.now = deps.now ?? (() => new Date());
    this.touchEveryMs = touchInterval(deps.limits.idleMs);
  }

  /** A new session (a new id at every sign-in): returns the token for the cookie, shown nowhere else. */
  async start(user: { id: string; accountId: string; email: string }, meta: ClientMeta): Promise<{ token: string; caller: SessionCaller }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.now();
    const absoluteExpiresAt = new Date(now.getTime() + this.deps.limits.absoluteMs);
    const record: SessionRecord = {
      id: hashToken(token),
      userId: user.id,
      accountId: user.accountId,
      email: user.email,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: this.expiryAfter(now, absoluteExpiresAt),
      absoluteExpiresAt,
      ip: meta.ip,
      userAgent: meta.userAgent.slice(0, 300),
      csrfToken: randomBytes(24).toString('base64url'),
    };
    await this.deps.sessions.insert(record);
    return { token, caller: callerOf(record) };
  }

  async resume(token: string, _meta: ClientMeta): Promise<SessionCaller | null> {
    if (token.length > 200) return null;
    const session = await this.deps.sessions.find(hashToken(token));
    const now = this.now();
    if (!session) return null;
    if (session.expiresAt.getTime() <= now.getTime()) {
      await this.deps.sessions.delete(session.id);
      return null;
    }
    if (now.getTime() - session.lastSeenAt.getTime() >= this.touchEveryMs) {
      await this.deps.sessions.touch(session.id, now, this.expiryAfter(now, session.absoluteExpiresAt));
    }
    return callerOf(session);
  }

  /** Ends the session of this token (sign-out); returns it if it existed. */
  end(token: string): Promise<SessionRecord | null> {
    return this.deps.sessions.delete(hashToken(token));
  }

  list(userId: string): Promise<SessionRecord[]> {
    return this.deps.sessions.listForUser(userId, this.now());
  }

  /** Ends one of the user's own sessions by its stored id; null when it is not theirs (or gone). */
  async endById(userId: string, sessionId: string): Promise<SessionRecord | null> {
    if (!/^[0-9a-f]{64}$/.test(sessionId)) return null;
    const session = await this.deps.sessions.find(sessionId);
    if (!session || session.userId !== userId) return null;
    return this.deps.sessions.delete(sessionId);
  }

  endOthers(userId: string, currentSessionId: string): Promise<number> {
    return this.deps.sessions.deleteForUser(userId, currentSessionId);
  }

  private expiryAfter(lastSeen: Date, absolute: Date): Date {
    return new Date(Math.min(lastSeen.getTime() + this.deps.limits.idleMs, absolute.getTime()));
  }

  /** Moves the session to another of its user's accounts (the caller checked the membership). */
  switchAccount(sessionId: string, accountId: string): Promise<boolean> {
    return this.deps.sessions.setAccount(sessionId, accountId);
  }

  /** Ends the user's sessions in one account (they were removed from it, or left). */
  endForMember(userId: string, accountId: string): Promise<number> {
    return this.deps.sessions.deleteForMember(userId, accountId);
  }
}

function callerOf(s: SessionRecord): SessionCaller {
  return { principal: { accountId: s.accountId, userId: s.userId, keyId: null }, email: s.email, sessionId: s.id, csrfToken: s.csrfToken };
}
