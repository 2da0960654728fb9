import { createHash } from 'node:crypto';
import { checkNewPassword, MAX_PASSWORD_LENGTH, normalizeEmail } from '../console/passwords.js';
import type { SessionStore, UserRecord, UserStore } from '../console/records.js';
import type { ClientMeta, ConsoleCaller } from '../console/sessions.js';
import type { EmailOutbox, OutboxHandler } from '../email/outbox.js';
import type { EmailSender } from '../email/ports.js';
import { AppError } from '../errors.js';
import type { IssuedLink, LinkTokens } from '../links/service.js';
import { resetPasswordMessage } from './emails.js';
import { consoleActor, type MailingDeps } from './mail.js';
import type { CredentialStore } from './ports.js';

export const RESET_LINK_MS = 3_600_000;

/**
 * A reset link for the user (the forgot-password email's, and the one a sign-up with a taken address
 * sends): bound to the password it would replace, so that once that password changed, by whatever
 * path, the link is over even if no update ended it.
 */
export function issueResetLink(links: Pick<LinkTokens, 'issue'>, user: Pick<UserRecord, 'id' | 'passwordHash'>): Promise<IssuedLink> {
  return links.issue('reset_password', { userId: user.id, password: passwordStamp(user.passwordHash) }, RESET_LINK_MS);
}

/** The outbox kind of a forgot-password email. */
export const RESET_EMAIL = 'password_reset';

/**
 * Sends a forgot-password email from the outbox: a reset link, issued now, when the address has an
 * account; nothing when it has none. A send that fails throws (the outbox tries again, with a new link:
 * only the newest works anyway).
 */
export function sendResetEmail(deps: { users: Pick<UserStore, 'findByEmail'>; links: Pick<LinkTokens, 'issue'>; mail: EmailSender }): OutboxHandler {
  return async (entry) => {
    const user = await deps.users.findByEmail(entry.to);
    if (!user) return;
    const link = await issueResetLink(deps.links, user);
    await deps.mail.send(resetPasswordMessage(entry.to, String(entry.data.baseUrl), link.token));
  };
}

/** Names the password hash without holding it (the hash itself stays in the user's document). */
function passwordStamp(passwordHash: string): string {
  return createHash('sha256').update(passwordHash).digest('base64url');
}

export type ResetRequestResult = { ok: true } | { ok: false; reason: 'throttled'; retryAfterSeconds: number };
export type ResetResult = { ok: true } | { ok: false; reason: 'expired' };
export type ChangeResult = { ok: true; sessionsEnded: number } | { ok: false; reason: 'wrong_password' };

/**
 * Forgotten passwords (a reset link by email, single use, one hour; the answer never tells whether the
 * address has an account) and changing a known one (Settings). A reset ends every session of the
 * user; a change ends the others. Only the user's newest reset link works, and a reset or a change
 * ends them all. The password rules are the console's (passwords.ts).
 */
export class PasswordService {
  private readonly now: () => Date;

  constructor(
    private readonly deps: Omit<MailingDeps, 'mail'> & {
      outbox: Pick<EmailOutbox, 'enqueue'>;
      users: Pick<UserStore, 'findById'>;
      credentials: Pick<CredentialStore, 'setPasswordHash'>;
      sessions: Pick<SessionStore, 'deleteForUser'>;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Emails a reset link when the address has an account; the same answer, after the same work, when
   * it has none: the request goes to the outbox, and whether the address has an account is looked up
   * when the email is sent, after the answer (sendResetEmail).
   */
  async requestReset(email: unknown, meta: ClientMeta & { baseUrl: string }): Promise<ResetRequestResult> {
    const address = normalizeEmail(email);
    const admission = await this.deps.throttle.admit(address, meta.ip);
    if (!admission.ok) return { ok: false, reason: 'throttled', retryAfterSeconds: admission.retryAfterSeconds };
    await this.deps.outbox.enqueue(RESET_EMAIL, address, { baseUrl: meta.baseUrl });
    return { ok: true };
  }

  /** Whether a reset link can still be used (its page shows the form, or says it expired). */
  async canReset(token: unknown): Promise<boolean> {
    return (await this.resettable(token)) !== null;
  }

  /**
   * Sets the new password with a reset link and ends every session of the user. The password is
   * checked before the link is used, so a refused password leaves the link usable.
   */
  async reset(token: unknown, newPassword: unknown, meta: ClientMeta): Promise<ResetResult> {
    const user = await this.resettable(token);
    if (!user) return { ok: false, reason: 'expired' };
    const password = checkNewPassword(newPassword, user.email);
    const passwordHash = await this.deps.hasher.hash(password);
    // The one guarded update that uses the link: of two concurrent resets, one gets here.
    const used = await this.deps.links.consume('reset_password', token);
    if (!used.ok) return { ok: false, reason: 'expired' };
    // The other links end before the password changes: a crash in between leaves none usable.
    await this.deps.links.revokeAll('reset_password', { userId: user.id });
    if (!(await this.deps.credentials.setPasswordHash(user.id, passwordHash))) return { ok: false, reason: 'expired' };
    const sessionsEnded = await this.deps.sessions.deleteForUser(user.id);
    await this.deps.audit.record({ ...consoleActor(user.email, meta, this.deps.host), event: 'user.password_reset', accountId: user.accountId, details: { userId: user.id, sessionsEnded } }, this.now());
    return { ok: true };
  }

  /** Settings: the current password, then the new one; the user's other sessions end. */
  async change(caller: ConsoleCaller, currentPassword: unknown, newPassword: unknown, meta: ClientMeta): Promise<ChangeResult> {
    const user = await this.deps.users.findById(caller.principal.userId);
    if (!user) throw new AppError('not_signed_in');
    const current = typeof currentPassword === 'string' ? currentPassword.slice(0, MAX_PASSWORD_LENGTH * 4) : '';
    if (current === '' || !(await this.deps.hasher.verify(user.passwordHash, current))) return { ok: false, reason: 'wrong_password' };
    const password = checkNewPassword(newPassword, user.email);
    const passwordHash = await this.deps.hasher.hash(password);
    await this.deps.links.revokeAll('reset_password', { userId: user.id });
    if (!(await this.deps.credentials.setPasswordHash(user.id, passwordHash))) throw new AppError('not_signed_in');
    const sessionsEnded = await this.deps.sessions.deleteForUser(user.id, caller.sessionId);
    await this.deps.audit.record(
      { ...consoleActor(user.email, meta, this.deps.host), event: 'user.password_changed', accountId: caller.principal.accountId, details: { userId: user.id, sessionsEnded } },
      this.now(),
    );
    return { ok: true, sessionsEnded };
  }

  /**
   * The user a reset link would set the password of, or null: the link unused and unexpired, the
   * newest of the user's (a newer one ends it), and issued for the password the user still has.
   */
  private async resettable(token: unknown): Promise<UserRecord | null> {
    const peeked = await this.deps.links.peek('reset_password', token);
    if (!peeked.ok) return null;
    const { userId, password } = peeked.record.payload;
    const user = typeof userId === 'string' ? await this.deps.users.findById(userId) : null;
    if (!user) return null;
    // A link of the previous release has no stamp: the revocations of a reset or a change end it.
    if (password !== undefined && password !== passwordStamp(user.passwordHash)) return null;
    const [newest] = await this.deps.links.listUsable('reset_password', { userId: user.id });
    return newest?.id === peeked.record.id ? user : null;
  }
}
