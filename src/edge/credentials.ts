/**
 * Who is calling an API door, decided once for HTTP and WebSocket alike. REST takes API keys only (a
 * `wi_tok_` there is `Invalid API key format`, as the seed's rules say); `/graphql` takes an API key or
 * a client token presented from one of the token's origins. A token acts for the key that minted it:
 * it counts against that key's rate limit and ends when the key is deleted.
 */
import { bearerToken } from '../domain/client-tokens/format.js';
import type { TokenCheck } from '../domain/client-tokens/service.js';
import { AppError } from '../domain/errors.js';
import type { RateLimitOutcome } from '../domain/keys/rate-limit.js';
import type { RevocationReason } from '../domain/keys/revocations.js';
import type { KeyAdmission, KeyAuthenticator } from '../domain/ports.js';
import type { KeyGrant, Principal } from '../domain/principal.js';

/** A caller and what the rate limit said of this request (null: no limit, or a console token). */
export interface Admission {
  principal: Principal;
  rateLimit: RateLimitOutcome | null;
}

/** A credential checked again: the caller as it is now, or why it may no longer call. */
export type CredentialCheck = { ok: true; principal: Principal } | { ok: false; error: AppError };

export interface Credentials {
  /** REST: an API key, or the contract's 401s; with its rate limit's verdict (the caller answers a refusal). */
  apiKey(authorization: string | undefined): Promise<KeyAdmission>;
  /**
   * `/graphql`: an API key, or a client token whose origins include `origin` (the request's Origin),
   * counted as one unit of its key's rate limit (the caller answers a refusal).
   */
  graphql(authorization: string | undefined, origin: string | undefined): Promise<Admission>;
  /** Further units of the caller's rate limit (each charging field past the first); null: none applies. */
  count(principal: Principal, units: number): Promise<RateLimitOutcome | null>;
  /** Called with the key id whenever a key is deleted or expires, on any instance (its tokens end with it). */
  onRevoked(listener: (keyId: string, reason: RevocationReason) => void): () => void;
  /**
   * Called with a key's grant as it stands after a change of its settings, on any instance (its tokens
   * act within it too): what was admitted under the old grant is held to the new one.
   */
  onGrantChanged(listener: (keyId: string, grant: KeyGrant) => void): () => void;
}

export interface TokenVerifier {
  verify(token: string, origin: string | undefined): Promise<TokenCheck>;
}

export function createCredentials(deps: { keys: KeyAuthenticator; tokens?: TokenVerifier }): Credentials {
  const { keys, tokens } = deps;
  return {
    apiKey: (authorization) => keys.authenticateWithLimit(authorization),
    async graphql(authorization, origin) {
      const token = tokens ? bearerToken(authorization) : undefined;
      if (token === undefined) return keys.authenticateWithLimit(authorization);
      const check = await tokens!.verify(token, origin);
      if (!check.ok) throw new AppError(check.reason);
      // A key's tokens count against its rate limit; the console's own tokens have no key.
      const rateLimit = check.principal.keyId !== null ? await keys.admit(check.principal.keyId, 1, check.principal) : null;
      return { principal: check.principal, rateLimit };
    },
    count: async (principal, units) => (principal.keyId !== null && units > 0 ? keys.admit(principal.keyId, units, principal) : null),
    onRevoked: (listener) => keys.onRevoked(listener),
    onGrantChanged: (listener) => keys.onGrantChanged(listener),
  };
}

/** True when an `Authorization` value presents an API key (whose answers browsers must not read). */
export function presentsApiKey(authorization: string | undefined): boolean {
  return typeof authorization === 'string' && /^Bearer[ ]+wi_live_/i.test(authorization);
}
