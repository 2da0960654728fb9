import { createHash } from 'node:crypto';
import { checkNewPassword, MAX_PASSWORD_LENGTH, normalizeEmail } from '../console/passwords.js';
import type { AuditActor } from '../audit/types.js';
import type { UserRecord, UserStore } from '../console/records.js';
import type { ClientMeta, SessionService } from '../console/sessions.js';
import type { SignInService } from '../console/signin.js';
import type { UserService } from '../console/users.js';
import type { CreditService } from '../credits/service.js';
import { invalid } from '../errors.js';
import { accountExistsMessage, verifyEmailMessage } from './emails.js';
import { consoleActor, sendOrFail } from './mail.js';
import type { MailingDeps } from './mail.js';
import type { SignupClaim, SignupClaimStore } from './ports.js';
import { issueResetLink } from './password-reset.js';

export const VERIFY_LINK_MS = 24 * 3_600_000;
const MAX_ACCOUNT_NAME = 200;

export type SignUpRequestResult = { ok: true } | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

export type VerifyResult =
  | { ok: true; token: string; accountId: string; userId: string }
  | { ok: false; reason: 'expired' }
  /** Opened outside the browser that sent the form: the sign-up password is asked first. */
  | { ok: false; reason: 'password_needed' }
  | { ok: false; reason: 'wrong_password' }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

/**
 * What proves the opener of a link is who sent the form: the mark (a random value in a cookie) of the
 * browser that sent it, or the password chosen at sign-up.
 */
export type SignUpProof = { browser: string | undefined } | { password: unknown };

/**
 * Self-serve sign-up: the form only sends an email. A new address gets a verification link carrying
 * what the account will be (its name, the address, the password's hash, the hash of the sending
 * browser's mark); an address that already has an account gets a reset link instead, and the answer
 * is the same either way. Nothing is created until the link is opened: then the account (with
 * SIGNUP_CREDITS, audited as a grant) and its owner, and the person is signed in. The link alone is
 * not enough: whoever typed someone else's address with their own password must not end up holding
 * the account that person confirms, so the opener shows the sending browser's mark or that password.
 * One account per address, however many links are opened at once.
 */
export class SignUpService {
  private readonly now: () => Date;

  constructor(
    private readonly deps: MailingDeps & {
      users: Pick<UserStore, 'findByEmail'>;
      userService: Pick<UserService, 'createOwner'>;
      credits: Pick<CreditService, 'createAccountWithId' | 'grant'>;
      claims: SignupClaimStore;
      sessions: Pick<SessionService, 'start'>;
      /** The sign-in throttle, which counts a wrong sign-up password as a failed sign-in. */
      passwordChecks: Pick<SignInService, 'checkPassword'>;
      signupCredits: number;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Checks the form, then emails the address (a verification or a reset link). Throws 400 for a refused field. */
  async request(input: { accountName?: unknown; email?: unknown; password?: unknown }, meta: ClientMeta & { baseUrl: string; browser: string }): Promise<SignUpRequestResult> {
    const accountName = checkAccountName(input.accountName);
    const email = normalizeEmail(input.email);
    const password = checkNewPassword(input.password, email);
    const admission = await this.deps.throttle.admit(email, meta.ip);
    if (!admission.ok) return { ok: false, reason: 'throttled', retryAfterSeconds: admission.retryAfterSeconds };
    // Hashed whether or not the address is taken: the answer takes as long either way.
    const passwordHash = await this.deps.hasher.hash(password);
    const existing = await this.deps.users.findByEmail(email);
    if (existing) {
      const link = await issueResetLink(this.deps.links, existing);
      await sendOrFail(this.deps.mail, accountExistsMessage(email, meta.baseUrl, link.token));
    } else {
      const link = await this.deps.links.issue('verify_email', { email, accountName, passwordHash, browserHash: browserHash(meta.browser) }, VERIFY_LINK_MS);
      await sendOrFail(this.deps.mail, verifyEmailMessage(email, meta.baseUrl, link.token));
    }
    return { ok: true };
  }

  /**
   * Opens a verification link: creates the account and its owner and starts their session. Exactly one
   * account per address, whatever the concurrency, the instance or a crash between the writes, without
   * transactions: the first link opened for the address claims it (one insert under a unique key) with
   * the account's id, and every opener of a link for that address completes that same sign-up, each
   * step idempotent (the account created under that id, its owner inserted under the unique email, the
   * credits granted under an op id of the account). The link is used up last, so opening it again after
   * a crash finishes the work. Only the opener of the claiming link is signed in; any other opener (a
   * second link for the address, the same link opened twice) is told the link expired, as for a used one.
   *
   * Before any of it, the opener proves they sent the form: the sending browser's mark, or else the
   * sign-up password, checked under the sign-in throttle; without either nothing is written. A link
   * issued before browsers were marked has no mark to match and always asks for the password.
   */
  async verify(token: unknown, proof: SignUpProof, meta: ClientMeta): Promise<VerifyResult> {
    const link = await this.deps.links.peek('verify_email', token);
    if (!link.ok) return { ok: false, reason: 'expired' };
    const { email, accountName, passwordHash, browserHash: sentFrom } = link.record.payload as { email: string; accountName: string; passwordHash: string; browserHash?: string };
    if ('browser' in proof) {
      if (!proof.browser || !sentFrom || browserHash(proof.browser) !== sentFrom) return { ok: false, reason: 'password_needed' };
    } else {
      const password = typeof proof.password === 'string' ? proof.password.slice(0, MAX_PASSWORD_LENGTH * 4) : '';
      const checked = await this.deps.passwordChecks.checkPassword(email, meta, 'sign_up', async () => password !== '' && (await this.deps.hasher.verify(passwordHash, password)));
      if (!checked.ok) return checked.reason === 'throttled' ? checked : { ok: false, reason: 'wrong_password' };
    }
    const now = this.now();
    const claim = await this.deps.claims.claim({ email, accountName, passwordHash, linkId: link.record.id }, now, new Date(now.getTime() + VERIFY_LINK_MS));
    const actor = consoleActor(email, meta, this.deps.host);
    const user = await this.complete(claim, actor);
    // The address has an account made another way (the CLI, an invitation, an earlier sign-up).
    if (!user) return { ok: false, reason: 'expired' };
    if (!(await this.deps.links.consume('verify_email', token)).ok || claim.linkId !== link.record.id) return { ok: false, reason: 'expired' };
    const { token: sessionToken } = await this.deps.sessions.start(user, meta);
    await this.deps.audit.record({ ...actor, event: 'console.signed_in', accountId: claim.accountId, details: { userId: user.id, via: 'email_verification' } }, this.now());
    return { ok: true, token: sessionToken, accountId: claim.accountId, userId: user.id };
  }

  /**
   * Brings the claimed sign-up to its end, from wherever it stopped: the account, its owner, the
   * sign-up credits. Each step is safe to repeat. Null when the address belongs to a user of another
   * account: nothing is created then (the claim is let go).
   */
  private async complete(claim: SignupClaim, actor: AuditActor): Promise<UserRecord | null> {
    const opId = `signup:${claim.accountId}`;
    const ownedHere = (u: UserRecord | null) => (u && u.accountId === claim.accountId ? u : null);
    const existing = await this.deps.users.findByEmail(claim.email);
    if (existing && !ownedHere(existing)) {
      await this.deps.claims.release(claim.email, claim.accountId);
      return null;
    }
    await this.deps.credits.createAccountWithId(claim.accountId, claim.accountName, opId, actor);
    // The unique email decides: whoever inserts first makes the owner; every other opener finds it.
    const user = existing ?? (await this.deps.userService.createOwner(claim.accountId, claim.email, claim.passwordHash, actor)) ?? ownedHere(await this.deps.users.findByEmail(claim.email));
    if (!user) return null;
    if (this.deps.signupCredits > 0) await this.deps.credits.grant(claim.accountId, this.deps.signupCredits, opId, actor);
    await this.deps.claims.release(claim.email, claim.accountId);
    return user;
  }
}

/** The link stores only the hash of the browser's mark, as it stores only the password's. */
function browserHash(mark: string): string {
  return createHash('sha256').update(mark).digest('hex');
}

export function checkAccountName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw invalid('accountName', 'Account name is required');
  if ([...name.trim()].length > MAX_ACCOUNT_NAME) throw invalid('accountName', `Account name must be at most ${MAX_ACCOUNT_NAME} characters`);
  return name.trim();
}
