/**
 * What the identity services store about a user besides the user record (src/data/credentials.ts, on
 * the same `console_users` documents): the password hash's replacement and the TOTP second factor.
 */
export interface TotpState {
  /** Base32 secret of the enabled authenticator. */
  secret: string;
  enabledAt: Date;
  /** The last accepted time step (30 s): a code of this step or an earlier one is never accepted again. */
  lastStep: number;
}

export interface TwoFactorRecord {
  totp: TotpState | null;
  /** A secret shown for set-up and not yet confirmed by a code. */
  pendingSecret: string | null;
  /** SHA-256 of each recovery code; usedAt set once it is used. */
  recoveryCodes: { hash: string; usedAt: Date | null }[];
}

export interface CredentialStore {
  /** Replaces the password hash; false when the user is gone. */
  setPasswordHash(userId: string, passwordHash: string): Promise<boolean>;
  twoFactorOf(userId: string): Promise<TwoFactorRecord | null>;
  /** Remembers a set-up secret (replacing an earlier unconfirmed one), unless TOTP is already enabled. */
  setPendingSecret(userId: string, secret: string): Promise<boolean>;
  /**
   * One guarded update: enables TOTP with the pending secret (it must still be `secret`), the step of
   * the code that confirmed it, and the recovery codes' hashes.
   */
  enableTotp(userId: string, secret: string, step: number, recoveryHashes: string[], at: Date): Promise<boolean>;
  /** One guarded update: records `step` as the last accepted one, only if it is later than the stored one. */
  acceptStep(userId: string, step: number): Promise<boolean>;
  /** One guarded update: marks the unused recovery code of this hash used; false when there is none. */
  useRecoveryCode(userId: string, hash: string, at: Date): Promise<boolean>;
  /** Removes TOTP, its pending secret and the recovery codes; false when it was not enabled. */
  disableTotp(userId: string): Promise<boolean>;
}
