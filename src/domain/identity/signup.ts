import { checkNewPassword, normalizeEmail } from '../console/passwords.js';
import type { UserStore } from '../console/records.js';
import type { ClientMeta, SessionService } from '../console/sessions.js';
import type { UserService } from '../console/users.js';
import type { CreditService } from '../credits/service.js';
import { invalid } from '../errors.js';
import { accountExistsMessage, verifyEmailMessage } from './emails.js';
import { consoleActor, sendOrFail } from './mail.js';
import type { MailingDeps } from './mail.js';
import { RESET_LINK_MS } from './password-reset.js';

export const VERIFY_LINK_MS = 24 * 3_600_000;
const MAX_ACCOUNT_NAME = 200;

export type SignUpRequestResult = { ok: true } | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

export type VerifyResult = { ok: true; token: string; accountId: string; userId: string } | { ok: false; reason: 'expired' };

/**
 * Self-serve sign-up: the form only sends an email. A new address gets a verification link carrying
 * what the account will be (its name, the address, the password's hash); an address that already has
 * an account gets a reset link instead, and the answer is the same either way. Nothing is created
 * until the link is opened: then the account (with SIGNUP_CREDITS, audited as a grant) and its owner,
 * and the person is signed in.
 */
export class SignUpService {
  private readonly now: () => Date;

  constructor(
    private readonly deps: MailingDeps & {
      users: Pick<UserStore, 'findByEmail'>;
      userService: Pick<UserService, 'createOwner'>;
      credits: Pick<CreditService, 'createAccount' | 'grant'>;
      sessions: Pick<SessionService, 'start'>;
      signupCredits: number;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Checks the form, then emails the address (a verification or a reset link). Throws 400 for a refused field. */
  async request(input: { accountName?: unknown; email?: unknown; password?: unknown }, meta: ClientMeta & { baseUrl: string }): Promise<SignUpRequestResult> {
    const accountName = checkAccountName(input.accountName);
    const email = normalizeEmail(input.email);
    const password = checkNewPassword(input.password, email);
    const admission = await this.deps.throttle.admit(email, meta.ip);
    if (!admission.ok) return { ok: false, reason: 'throttled', retryAfterSeconds: admission.retryAfterSeconds };
    // Hashed whether or not the address is taken: the answer takes as long either way.
    const passwordHash = await this.deps.hasher.hash(password);
    const existing = await this.deps.users.findByEmail(email);
    if (existing) {
      const link = await this.deps.links.issue('reset_password', { userId: existing.id }, RESET_LINK_MS);
      await sendOrFail(this.deps.mail, accountExistsMessage(email, meta.baseUrl, link.token));
    } else {
      const link = await this.deps.links.issue('verify_email', { email, accountName, passwordHash }, VERIFY_LINK_MS);
      await sendOrFail(this.deps.mail, verifyEmailMessage(email, accountName, meta.baseUrl, link.token));
    }
    return { ok: true };
  }

  /** Opens a verification link: creates the account and its owner and starts their session. */
  async verify(token: unknown, meta: ClientMeta): Promise<VerifyResult> {
    const use = await this.deps.links.consume('verify_email', token);
    if (!use.ok) return { ok: false, reason: 'expired' };
    const { email, accountName, passwordHash } = use.record.payload as { email: string; accountName: string; passwordHash: string };
    // Another link to the same address was opened first: that one made the account.
    if (await this.deps.users.findByEmail(email)) return { ok: false, reason: 'expired' };
    const actor = consoleActor(email, meta, this.deps.host);
    const account = await this.deps.credits.createAccount(accountName, 0, actor);
    if (this.deps.signupCredits > 0) await this.deps.credits.grant(account.id, this.deps.signupCredits, `signup:${use.record.id}`, actor);
    const user = await this.deps.userService.createOwner(account.id, email, passwordHash, actor);
    // Taken between the check and the insert (two links opened at once): the account stays empty.
    if (!user) return { ok: false, reason: 'expired' };
    const { token: sessionToken } = await this.deps.sessions.start(user, meta);
    await this.deps.audit.record({ ...actor, event: 'console.signed_in', accountId: account.id, details: { userId: user.id, via: 'email_verification' } }, this.now());
    return { ok: true, token: sessionToken, accountId: account.id, userId: user.id };
  }
}

export function checkAccountName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw invalid('accountName', 'Account name is required');
  if ([...name.trim()].length > MAX_ACCOUNT_NAME) throw invalid('accountName', `Account name must be at most ${MAX_ACCOUNT_NAME} characters`);
  return name.trim();
}
