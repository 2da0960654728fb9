/** Persistence of console users, sessions and sign-in throttles, implemented in src/data and by test fakes. */
export interface UserRecord {
  id: string;
  accountId: string;
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
}

/** Failed sign-ins of one subject (an email or an IP address) in the current window. */
export interface ThrottleState {
  failures: number;
  windowStart: Date;
  /** Lock-outs so far (each one longer than the last). */
  lockouts: number;
  lockedUntil: Date | null;
}

export interface ThrottleStore {
  get(subject: string): Promise<ThrottleState | null>;
  /** Counts one failure atomically, opening a new window when the last began before `windowStart`. */
  fail(subject: string, at: Date, windowStart: Date): Promise<ThrottleState>;
  /** Sets the lock of a subject (only ever extends it) and counts the lock-out. */
  lock(subject: string, until: Date): Promise<void>;
  clear(subject: string): Promise<void>;
}
