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
