/** Persistence of console users, sessions and sign-in throttles, implemented in src/data and by test fakes. */
import type { Role } from '../team/permissions.js';

/** A user's place in one account. */
export interface Membership {
  accountId: string;
  role: Role;
  joinedAt: Date;
}

export interface UserRecord {
  id: string;
  /** The account the user was created in (their first membership's, kept for older readers). */
  accountId: string;
  /**
   * Every account the user belongs to, with a role in each. A user stored before teams existed has
   * none stored: it reads as the owner of `accountId` (src/data/console.ts).
   */
  memberships: Membership[];
  /** Trimmed and lower-cased; unique. */
  email: string;
  /** argon2id PHC string; the password itself is never stored. */
  passwordHash: string;
  createdAt: Date;
}

export interface UserStore {
  /** Inserts the user; null when the email is taken. */
  insert(user: Omit<UserRecord, 'id'>): Promise<UserRecord | null>;
  findByEmail(email: string): Promise<UserRecord | null>;
  findById(userId: string): Promise<UserRecord | null>;
  listForAccount(accountId: string): Promise<UserRecord[]>;
  delete(userId: string): Promise<UserRecord | null>;
}

export interface SessionRecord {
  /** SHA-256 (hex) of the session token; the token itself lives only in the browser's cookie. */
  id: string;
  userId: string;
  accountId: string;
  email: string;
  createdAt: Date;
  lastSeenAt: Date;
  /** min(absolute limit, last seen + idle timeout); the database's TTL monitor removes it after. */
  expiresAt: Date;
  absoluteExpiresAt: Date;
  ip: string | null;
  userAgent: string;
  /** Synchronizer token for forms posted by clients that send neither Sec-Fetch-Site nor Origin. */
  csrfToken: string;
}

export interface SessionStore {
  insert(session: SessionRecord): Promise<void>;
  find(id: string): Promise<SessionRecord | null>;
  touch(id: string, lastSeenAt: Date, expiresAt: Date): Promise<void>;
  delete(id: string): Promise<SessionRecord | null>;
  /** Sessions of the user that have not expired, newest first. */
  listForUser(userId: string, now: Date): Promise<SessionRecord[]>;
  /** Deletes every session of the user (but `except`); returns how many. */
  deleteForUser(userId: string, except?: string): Promise<number>;
  /** Deletes the user's sessions whose current account is `accountId` (removed from it); returns how many. */
  deleteForMember(userId: string, accountId: string): Promise<number>;
  /** Moves the session to another current account (the account switcher). */
  setAccount(id: string, accountId: string): Promise<boolean>;
}

/**
 * Sign-in attempts of one subject (an email or an IP address) in the current window. An attempt counts
 * as a failure from the moment it is reserved, before its password is checked: concurrent attempts
 * cannot all slip under the limit. A right password gives its count back.
 */
export interface ThrottleState {
  /** Failed attempts in the window, the ones still being judged included. */
  failures: number;
  /** Attempts reserved and not yet judged. */
  pending: number;
  windowStart: Date;
  /** Lock-outs so far (each one longer than the last). */
  lockouts: number;
  lockedUntil: Date | null;
}

export type ThrottleReservation = { reserved: true } | { reserved: false; state: ThrottleState };

export interface ThrottleStore {
  /**
   * One guarded update: reserves an attempt (counted as a failure and pending) unless the subject is
   * locked at `at`, or already has `max` failures in the window (an expired lock lets one attempt at a
   * time through). A window that began before `windowStart` is replaced by a new one.
   */
  reserve(subject: string, at: Date, windowStart: Date, max: number): Promise<ThrottleReservation>;
  /** A reserved attempt was judged wrong: it stays a failure. Null when the subject was cleared meanwhile. */
  judgedWrong(subject: string): Promise<ThrottleState | null>;
  /** A reserved attempt is given back (judged right, or refused by another subject's limit). */
  release(subject: string): Promise<void>;
  /** Locks the subject until `until` and counts the lock-out, unless it is already locked at `at`. */
  lock(subject: string, at: Date, until: Date): Promise<void>;
  /**
   * A reserved attempt was judged right: the failures judged so far, the lock and the lock-outs are
   * forgotten; other attempts still pending stay counted.
   */
  forgive(subject: string): Promise<void>;
}
