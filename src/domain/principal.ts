import type { ClientScope } from './client-tokens/scopes.js';
import type { KeyPermission } from './keys/permissions.js';
import type { KeyRefill } from './keys/records.js';

/** Who is calling: the plain value every service receives instead of a request or a GraphQL context. */
export interface Principal {
  /** Account id, as a 24-hex ObjectId string. */
  readonly accountId: string;
  /** Id of the API key that authenticated the call; null when a signed-in console user acts (the playground). */
  readonly keyId: string | null;
  /** The console user acting, when the call comes from the console. */
  readonly userId?: string;
  /** Set when a client token (minted by the key `keyId`) authenticated the call. */
  readonly token?: ClientTokenGrant;
  /**
   * What the key (`keyId`: the caller's, or the one that minted its client token) may do; absent: every
   * permission (a key stored without a list, or a console user). The operation catalog names the
   * permission each operation needs.
   */
  readonly permissions?: readonly KeyPermission[];
  /** The key's own rate limit per minute; absent or null: the server's RATE_LIMIT_PER_MINUTE. */
  readonly rateLimitPerMinute?: number | null;
  /** The key's credit limit: a charge reserves on the key too; absent or null: none (issue 24). */
  readonly creditLimit?: number | null;
  /** The key's refill as last read (lets the reservation try its usual case first); absent: not known. */
  readonly creditRefill?: KeyRefill | null;
}

/** A verified key's own rules, as a principal carries them (for a client token: its minting key's). */
export interface KeyGrant {
  /** Every permission for a key stored without a list. */
  readonly permissions: readonly KeyPermission[];
  /** Requests per minute for this key; null: the server's RATE_LIMIT_PER_MINUTE. */
  readonly rateLimitPerMinute: number | null;
  /** Null: no credit limit (charges reserve nothing on the key). */
  readonly creditLimit: number | null;
  readonly creditRefill?: KeyRefill | null;
}

/** What a client token allows: it acts for its key's account, within these bounds. */
export interface ClientTokenGrant {
  readonly tokenId: string;
  readonly origins: readonly string[];
  readonly scopes: readonly ClientScope[];
  readonly maxCredits: number | null;
  /** Only documents registered for the account may run (CONTRACT "Trusted documents"). */
  readonly trustedDocumentsOnly: boolean;
  readonly expiresAt: Date;
}

/** A caller authenticated by an API key (REST, GraphQL), or by a client token of one (GraphQL). */
export interface KeyPrincipal extends Principal {
  readonly keyId: string;
}

/** Where a call came from, as usage and audit record it: the key id (a token's: its key's), or `console`. */
export type CallSource = string;

export function sourceOf(principal: Principal): CallSource {
  return principal.keyId ?? 'console';
}

/** Whose key a charge is held by: the key's credit limit, when it has one (a principal is one). */
export type ChargeHolder = Pick<Principal, 'keyId' | 'creditLimit' | 'creditRefill'>;
