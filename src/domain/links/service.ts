import { createHash, randomBytes } from 'node:crypto';
import type { LinkPayload, LinkPurpose, LinkTokenRecord, LinkTokenStore } from './records.js';

export type { LinkPayload, LinkPurpose, LinkTokenRecord } from './records.js';

/** A token as links carry it: 256 random bits, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface IssuedLink {
  /** Goes into the link only; never stored. */
  token: string;
  id: string;
  expiresAt: Date;
}

export type LinkUse = { ok: true; record: LinkTokenRecord } | { ok: false };

/**
 * Single-use tokens for links sent by email (email verification, password reset, invitations): 256
 * random bits, only their SHA-256 stored with the purpose, a payload and an expiry. A token is used
 * once, by one guarded update, and the database's TTL index removes it after it expires.
 */
export class LinkTokens {
  private readonly now: () => Date;

  constructor(private readonly deps: { store: LinkTokenStore; now?: () => Date }) {
    this.now = deps.now ?? (() => new Date());
  }

  async issue(purpose: LinkPurpose, payload: LinkPayload, ttlMs: number): Promise<IssuedLink> {
    const token = randomBytes(32).toString('base64url');
    const createdAt = this.now();
    const record = await this.deps.store.insert({ hash: hashLinkToken(token), purpose, payload, createdAt, expiresAt: new Date(createdAt.getTime() + ttlMs), usedAt: null });
    return { token, id: record.id, expiresAt: record.expiresAt };
  }

  /** Uses the token: ok for exactly one caller while it is unused and unexpired. */
  async consume(purpose: LinkPurpose, token: unknown): Promise<LinkUse> {
    if (!isToken(token)) return { ok: false };
    const record = await this.deps.store.consume(hashLinkToken(token), purpose, this.now());
    return record ? { ok: true, record } : { ok: false };
  }

  /** Reads the token without using it (a page that shows a form before the token is used). */
  async peek(purpose: LinkPurpose, token: unknown): Promise<LinkUse> {
    if (!isToken(token)) return { ok: false };
    const record = await this.deps.store.findUsable(hashLinkToken(token), purpose, this.now());
    return record ? { ok: true, record } : { ok: false };
  }

  /** Tokens still usable whose payload has every field of `match` (e.g. an account's open invitations). */
  listUsable(purpose: LinkPurpose, match: LinkPayload): Promise<LinkTokenRecord[]> {
    return this.deps.store.listUsable(purpose, match, this.now());
  }

  /** Makes a still-usable token unusable (revocation); null when it was used, revoked, expired or not matched. */
  revoke(purpose: LinkPurpose, id: string, match: LinkPayload): Promise<LinkTokenRecord | null> {
    return this.deps.store.revoke(id, purpose, match, this.now());
  }

  /** Makes every still-usable token of a purpose whose payload has `match` unusable; how many were. */
  revokeAll(purpose: LinkPurpose, match: LinkPayload): Promise<number> {
    return this.deps.store.revokeAll(purpose, match, this.now());
  }
}

export function hashLinkToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function isToken(token: unknown): token is string {
  return typeof token === 'string' && TOKEN.test(token);
}
