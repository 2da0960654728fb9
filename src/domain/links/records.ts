/** Persistence of single-use link tokens (src/data/link-tokens.ts and test fakes). */

/**
 * What a token is for; each purpose's tokens are good for that purpose only. `second_factor` is not
 * emailed: it is the cookie of a sign-in whose password was right and whose code is still awaited.
 */
export type LinkPurpose = 'verify_email' | 'reset_password' | 'invitation' | 'second_factor';

/** Plain values only: the payload is stored as a document. */
export type LinkPayload = Readonly<Record<string, string | number | boolean | null>>;

export interface LinkTokenRecord {
  id: string;
  /** SHA-256 (hex) of the token; the token itself is only in the link. */
  hash: string;
  purpose: LinkPurpose;
  payload: LinkPayload;
  createdAt: Date;
  /** The database's TTL index removes the record after this time. */
  expiresAt: Date;
  /** Set once, by the update that uses (or revokes) the token. */
  usedAt: Date | null;
}

export interface LinkTokenStore {
  insert(record: Omit<LinkTokenRecord, 'id'>): Promise<LinkTokenRecord>;
  /** The record of this hash and purpose while unused and unexpired at `now`. */
  findUsable(hash: string, purpose: LinkPurpose, now: Date): Promise<LinkTokenRecord | null>;
  /**
   * One guarded update ({hash, purpose, usedAt: null, expiresAt > now} → usedAt = now): of concurrent
   * uses exactly one gets the record; the others, and any later one, get null.
   */
  consume(hash: string, purpose: LinkPurpose, now: Date): Promise<LinkTokenRecord | null>;
  /** Unused, unexpired records of a purpose whose payload has every field of `match`, newest first. */
  listUsable(purpose: LinkPurpose, match: LinkPayload, now: Date): Promise<LinkTokenRecord[]>;
  /** Uses up one record by id (revocation), when it is still usable and its payload has `match`. */
  revoke(id: string, purpose: LinkPurpose, match: LinkPayload, now: Date): Promise<LinkTokenRecord | null>;
  /** Uses up every usable record of a purpose whose payload has every field of `match`; how many. */
  revokeAll(purpose: LinkPurpose, match: LinkPayload, now: Date): Promise<number>;
}
