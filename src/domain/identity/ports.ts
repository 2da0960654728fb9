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

/**
 * A sign-up in progress for one address (src/data/signup-claims.ts): the first verification link
 * opened for the address reserves it, and with it the id of the account it becomes. Every opener of
 * a link for that address completes the same sign-up, idempotently, so two links opened at once (or
 * one opened again after a crash) make one account, never two.
 */
export interface SignupClaim {
  /** Normalized address: the unique key. */
  email: string;
  /** Chosen when the claim is made: the account is created with this id. */
  accountId: string;
  accountName: string;
  /** argon2id hash of the password given at sign-up. */
  passwordHash: string;
  /** The verification link whose opening made the claim: its opener is the one signed in. */
  linkId: string;
  createdAt: Date;
}

export interface SignupClaimStore {
  /**
   * Claims the address with these values and a new account id, unless it is claimed already: one
   * insert under a unique key, so of concurrent claims exactly one is stored. Returns the stored claim
   * (this one or the earlier), whose account every caller completes. The claim lapses at `expiresAt`.
   */
  claim(claim: Omit<SignupClaim, 'accountId' | 'createdAt'>, now: Date, expiresAt: Date): Promise<SignupClaim>;
  /** Removes the address's claim once its account is complete (only the claim of that account). */
  release(email: string, accountId: string): Promise<void>;
}
