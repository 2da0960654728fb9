/** What the domain needs to send email; SMTP (nodemailer) and the log implement it (src/providers/email). */
export interface EmailMessage {
  /** One recipient address. */
  to: string;
  subject: string;
  /** Plain-text body, links written out in full. */
  text: string;
  /** HTML body (every interpolated value escaped). */
  html: string;
}

export interface EmailSender {
  /** Resolves once the message is accepted for delivery (by the SMTP server, or written to the log). */
  send(message: EmailMessage): Promise<void>;
}

/**
 * The emails sent per address and per client IP address, shared by every gateway on the database: a
 * sliding window kept as the times of the last sends (src/data/email-throttle.ts).
 */
export interface EmailThrottleStore {
  /**
   * One guarded update: records a send of `subject` at `at` unless it already has `max` sends after
   * `windowStart`. Refused: the time of the oldest send still in the window (when it leaves, one fits).
   */
  take(subject: string, at: Date, windowStart: Date, max: number): Promise<{ taken: true } | { taken: false; oldest: Date }>;
}

/**
 * An email to send after the request that asked for it was answered: what kind, to whom, and the
 * plain values its handler needs (never a link token: the handler issues the link when it sends).
 */
export interface OutboxEntry {
  id: string;
  kind: string;
  to: string;
  data: Readonly<Record<string, string | number | boolean | null>>;
  createdAt: Date;
  /** Claims so far, this one included. */
  attempts: number;
}

/** The emails not sent yet, shared by every gateway on the database (src/data/email-outbox.ts). */
export interface EmailOutboxStore {
  /** Stores the entry, claimed by its writer until `claimedUntil` (a crash lets the claim lapse). */
  insert(entry: Omit<OutboxEntry, 'id' | 'attempts'>, claimedUntil: Date): Promise<OutboxEntry>;
  /** One guarded update: claims one entry whose claim lapsed at `now`, until `claimedUntil`; null when none is due. */
  claimDue(now: Date, claimedUntil: Date): Promise<OutboxEntry | null>;
  /** Gives up the claim: the entry is due again at `retryAt`. */
  retryAt(id: string, retryAt: Date): Promise<void>;
  remove(id: string): Promise<void>;
}
