import { createHash, randomInt } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';
import type { AuditStore } from '../audit/types.js';
import type { PasswordHasher } from '../console/passwords.js';
import { MAX_PASSWORD_LENGTH } from '../console/passwords.js';
import type { UserStore } from '../console/records.js';
import type { ClientMeta, ConsoleCaller } from '../console/sessions.js';
import { AppError } from '../errors.js';
import { consoleActor } from './mail.js';
import type { CredentialStore } from './ports.js';

export const RECOVERY_CODE_COUNT = 10;
const ISSUER = 'credit-gateway';
/** RFC 6238 as authenticator apps read it: 6 digits, 30 s steps, SHA-1 (otplib's defaults). */
const STEP_SECONDS = 30;
/** A code of the step before or after the current one is accepted too (clock drift). */
const TOLERANCE_SECONDS = STEP_SECONDS;
/** Recovery codes: 10 characters of base32 (50 bits), shown as `xxxxx-xxxxx`. */
const RECOVERY_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

export interface TwoFactorStatus {
  enabled: boolean;
  /** Recovery codes not used yet (enabled only). */
  recoveryCodesLeft: number;
}

export interface TwoFactorSetup {
  /** Base32, as people type it into an authenticator app. */
  secret: string;
  /** `otpauth://totp/…`, what the QR code holds. */
  uri: string;
}

export type EnableResult = { ok: true; recoveryCodes: string[] } | { ok: false; reason: 'wrong_code' | 'no_setup' };
export type DisableResult = { ok: true } | { ok: false; reason: 'wrong_password' | 'not_enabled' };

/**
 * TOTP second factor (RFC 6238) of console users. Set-up shows a secret that is enabled only once an
 * authenticator's code confirms it; enabling gives 10 recovery codes, shown once and stored as their
 * SHA-256. A code is accepted once: the step of the last accepted code is stored by a guarded update,
 * and only a later step passes. Disabling needs the current password.
 */
export class TwoFactorService {
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      users: Pick<UserStore, 'findById'>;
      credentials: CredentialStore;
      hasher: PasswordHasher;
      audit: AuditStore;
      host: string;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Whether the user signs in with a second factor (the account's `Require two-factor authentication` asks it). */
  async isEnabled(userId: string): Promise<boolean> {
    return !!(await this.deps.credentials.twoFactorOf(userId))?.totp;
  }

  async status(userId: string): Promise<TwoFactorStatus> {
    const state = await this.deps.credentials.twoFactorOf(userId);
    return { enabled: !!state?.totp, recoveryCodesLeft: state?.totp ? state.recoveryCodes.filter((c) => !c.usedAt).length : 0 };
  }

  /** A new secret to set up (replacing an unconfirmed one). Null when two-factor is already enabled. */
  async beginSetup(caller: ConsoleCaller): Promise<TwoFactorSetup | null> {
    const secret = generateSecret();
    if (!(await this.deps.credentials.setPendingSecret(caller.principal.userId, secret))) return null;
    return { secret, uri: generateURI({ issuer: ISSUER, label: caller.email, secret }) };
  }

  /** The secret being set up, to show it again (after a wrong code). */
  async pendingSetup(caller: ConsoleCaller): Promise<TwoFactorSetup | null> {
    const state = await this.deps.credentials.twoFactorOf(caller.principal.userId);
    if (!state?.pendingSecret || state.totp) return null;
    return { secret: state.pendingSecret, uri: generateURI({ issuer: ISSUER, label: caller.email, secret: state.pendingSecret }) };
  }

  /** Confirms the set-up with a code from the authenticator: enables it and returns the recovery codes (shown once). */
  async enable(caller: ConsoleCaller, code: unknown, meta: ClientMeta): Promise<EnableResult> {
    const userId = caller.principal.userId;
    const state = await this.deps.credentials.twoFactorOf(userId);
    if (!state?.pendingSecret || state.totp) return { ok: false, reason: 'no_setup' };
    const step = await this.matchingStep(state.pendingSecret, code, -1);
    if (step === null) return { ok: false, reason: 'wrong_code' };
    const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    if (!(await this.deps.credentials.enableTotp(userId, state.pendingSecret, step, recoveryCodes.map(hashRecoveryCode), this.now()))) {
      return { ok: false, reason: 'no_setup' };
    }
    await this.deps.audit.record({ ...consoleActor(caller.email, meta, this.deps.host), event: 'user.2fa_enabled', accountId: caller.principal.accountId, details: { userId } }, this.now());
    return { ok: true, recoveryCodes };
  }

  async disable(caller: ConsoleCaller, password: unknown, meta: ClientMeta): Promise<DisableResult> {
    const user = await this.deps.users.findById(caller.principal.userId);
    if (!user) throw new AppError('not_signed_in');
    const secret = typeof password === 'string' ? password.slice(0, MAX_PASSWORD_LENGTH * 4) : '';
    if (secret === '' || !(await this.deps.hasher.verify(user.passwordHash, secret))) return { ok: false, reason: 'wrong_password' };
    if (!(await this.deps.credentials.disableTotp(user.id))) return { ok: false, reason: 'not_enabled' };
    await this.deps.audit.record({ ...consoleActor(user.email, meta, this.deps.host), event: 'user.2fa_disabled', accountId: caller.principal.accountId, details: { userId: user.id } }, this.now());
    return { ok: true };
  }

  /**
   * The second step of signing in: a current authenticator code (accepted once: its step must be later
   * than the last accepted one, stored by one guarded update) or an unused recovery code (used up by
   * one guarded update). False for anything else.
   */
  async verify(userId: string, code: unknown): Promise<boolean> {
    if (typeof code !== 'string' || code.length > 64) return false;
    const state = await this.deps.credentials.twoFactorOf(userId);
    if (!state?.totp) return false;
    const digits = code.replace(/[\s-]/g, '');
    if (/^\d{6}$/.test(digits)) {
      const step = await this.matchingStep(state.totp.secret, digits, state.totp.lastStep);
      return step !== null && (await this.deps.credentials.acceptStep(userId, step));
    }
    const recovery = normalizeRecoveryCode(code);
    return recovery !== null && (await this.deps.credentials.useRecoveryCode(userId, hashRecoveryCode(recovery), this.now()));
  }

  /** The time step a 6-digit code belongs to (now, or one step either side), if it is later than `after`. */
  private async matchingStep(secret: string, code: unknown, after: number): Promise<number | null> {
    if (typeof code !== 'string') return null;
    const token = code.replace(/\s/g, '');
    if (!/^\d{6}$/.test(token)) return null;
    const epoch = Math.floor(this.now().getTime() / 1000);
    const result = await verify({ secret, token, epoch, epochTolerance: TOLERANCE_SECONDS });
    if (!result.valid) return null;
    const step = Math.floor(epoch / STEP_SECONDS) + result.delta;
    return step > after ? step : null;
  }
}

function newRecoveryCode(): string {
  const chars = Array.from({ length: 10 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]);
  return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`;
}

/** `ABCDE-FGHIJ`, `abcde fghij`, `abcdefghij` are the same code. */
function normalizeRecoveryCode(code: string): string | null {
  const plain = code.toLowerCase().replace(/[\s-]/g, '');
  return /^[a-z2-7]{10}$/.test(plain) ? `${plain.slice(0, 5)}-${plain.slice(5)}` : null;
}

function hashRecoveryCode(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}
