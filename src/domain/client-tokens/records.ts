import type { ClientScope } from './scopes.js';

/** Persistence of client tokens, implemented in src/data (MongoDB) and by test fakes. */
export interface ClientTokenRecord {
  id: string;
  accountId: string;
  /** The API key that minted it: deleting that key ends the token. Null for the console's own tokens. */
  keyId: string | null;
  /** The console user a console token (the explorer's) was minted for; null for tokens of a key. */
  userId: string | null;
  /** SHA-256 (hex) of the token; the token itself is never stored. */
  hash: string;
  origins: readonly string[];
  scopes: readonly ClientScope[];
  /** The most this token may spend in total; null: only the account's balance limits it. */
  maxCredits: number | null;
  /** Runs only the account's registered (trusted) documents; false for tokens from before the option. */
  trustedDocumentsOnly: boolean;
  /** The console session a console token was minted in: it ends with that session. Null for tokens of a key (and older console tokens). */
  sessionId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

export interface ClientTokenStore {
  insert(token: Omit<ClientTokenRecord, 'id'>): Promise<ClientTokenRecord>;
  findByHash(hash: string): Promise<ClientTokenRecord | null>;
  /**
   * Takes `credits` from the token's budget in one guarded update: only while spent + credits stays
   * within maxCredits. False when that would pass the budget (nothing taken).
   */
  reserve(tokenId: string, credits: number, maxCredits: number): Promise<boolean>;
  /** Gives back credits reserved for work that was not charged in the end. */
  release(tokenId: string, credits: number): Promise<void>;
}
