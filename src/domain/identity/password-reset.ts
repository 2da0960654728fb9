import { checkNewPassword, MAX_PASSWORD_LENGTH, normalizeEmail } from '../console/passwords.js';
import type { SessionStore, UserStore } from '../console/records.js';
import type { ClientMeta, ConsoleCaller } from '../console/sessions.js';
import { AppError } from '../errors.js';
import { resetPasswordMessage } from './emails.js';
import { consoleActor, sendOrFail } from './mail.js';
import type { MailingDeps } from './mail.js';
import type { CredentialStore } from './ports.js';

export const RESET_LINK_MS = 3_600_000;

export type ResetRequestResult = { ok: true } | { ok: false; reason: 'throttled'; retryAfterSeconds: number };
export type ResetResult = { ok: true } | { ok: false; reason: 'expired' };
export type ChangeResult = { ok: true; sessionsEnded: number } | { ok: false; reason: 'wrong_password' };

/**
 * Forgotten passwords (a reset link by email, single use, one hour; the answer never tells whether the
 * address has an account) and changing a known one (Settings). A reset ends every session of the
 * user; a change ends the others. The password rules are the console's (passwords.ts).
 */
export class PasswordService {
  private readonly now: () => Date;

  constructor(
    private readonly deps: MailingDeps & {
      users: Pick<UserStore, 'findByEmail' | 'findById'>;
      credentials: Pick<CredentialStore, 'setPasswordHash'>;
      sessions: Pick<SessionStore, 'deleteForUser'>;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Emails a reset link when the address has an account; the same answer when it has none. */
  async requestReset(email: unknown, meta: ClientMeta & { baseUrl: string }): Promise<ResetRequestResult> {
    const address = normalizeEmail(email);
    const admission = await this.deps.throttle.admit(address, meta.ip);
    if (!admission.ok) return { ok: false, reason: 'throttled', retryAfterSeconds: admission.retryAfterSeconds };
    const user = await this.deps.users.findByEmail(address);
    if (user) {
      const link = await this.deps.links.issue('reset_password', { userId: user.id }, RESET_LINK_MS);
      await sendOrFail(this.deps.mail, resetPasswordMessage(address, meta.baseUrl, link.token));
    }
    return { ok: true };
  }

  /** Whether a reset link can still be used (its page shows the form, or says it expired). */
  async canReset(token: unknown): Promise<boolean> {
    return (await this.deps.links.peek('reset_password', token)).ok;
  }

  /**
   * Sets the new password with a reset link and ends every session of the user. The password is
   * checked before the link is used, so a refused password leaves the link usable.
   */
  async reset(token: unknown, newPassword: unknown, meta: ClientMeta): Promise<ResetResult> {
    const peeked = await this.deps.links.peek('reset_password', token);
    const userId = peeked.ok ? String(peeked.record.payload.userId) : '';
    const user = userId ? await this.deps.users.findById(userId) : null;
    if (!user) return { ok: false, reason: 'expired' };
    const password = checkNewPassword(newPassword, user.email);
    const passwordHash = await this.deps.hasher.hash(password);
    // The one guarded update that uses the link: of two concurrent resets, one gets here.
    const used = await this.deps.links.consume('reset_password', token);
    if (!used.ok) return { ok: false, reason: 'expired' };
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
    if (!(await this.deps.credentials.setPasswordHash(user.id, await this.deps.hasher.hash(password)))) throw new AppError('not_signed_in');
    const sessionsEnded = await this.deps.sessions.deleteForUser(user.id, caller.sessionId);
    await this.deps.audit.record(
      { ...consoleActor(user.email, meta, this.deps.host), event: 'user.password_changed', accountId: caller.principal.accountId, details: { userId: user.id, sessionsEnded } },
      this.now(),
    );
    return { ok: true, sessionsEnded };
  }
}
