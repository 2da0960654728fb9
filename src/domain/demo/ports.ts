/** The claim on seeding the demo, one per database (src/data/demo-seed-claim.ts). */
export interface SeedClaim {
  state: 'seeding' | 'done';
  /** When the holder claimed it (or took it over); a claim still seeding long after was abandoned. */
  claimedAt: Date;
  holder: string;
  /** The demo account, once created (a holder that takes over finishes it). */
  accountId: string | null;
}

export interface SeedClaimStore {
  get(): Promise<SeedClaim | null>;
  /** Inserts the claim; false when one exists already (another instance seeds, or has seeded). */
  claim(holder: string, at: Date): Promise<boolean>;
  /** Takes over a claim still seeding since `claimedAt`; false when another instance was first. */
  takeOver(claimedAt: Date, holder: string, at: Date): Promise<boolean>;
  recordAccount(holder: string, accountId: string): Promise<void>;
  finish(holder: string, at: Date): Promise<void>;
}
