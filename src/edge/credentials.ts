/**
 * Who is calling an API door, decided once for HTTP and WebSocket alike. REST takes API keys only (a
 * `wi_tok_` there is `Invalid API key format`, as the seed's rules say); `/graphql` takes an API key or
 * a client token presented from one of the token's origins. A token acts for the key that minted it:
 * it counts against that key's rate limit and ends when the key is deleted.
 */
import { bearerToken } from '../domain/client-tokens/format.js';
import type { TokenCheck } from '../domain/client-tokens/service.js';
import { AppError } from '../domain/errors.js';
import type { KeyAdmission, KeyAuthenticator } from '../domain/ports.js';
import type { Principal } from '../domain/principal.js';

export interface Credentials {
  /** REST: an API key, or the contract's 401s; with its rate limit's verdict (the caller answers a refusal). */
  apiKey(authorization: string | undefined): Promise<KeyAdmission>;
  /** `/graphql`: an API key, or a client token whose origins include `origin` (the request's Origin). */
  graphql(authorization: string | undefined, origin: string | undefined): Promise<Principal>;
  /** Called with the key id whenever a key is deleted, on any instance (its tokens end with it). */
  onRevoked(listener: (keyId: string) => void): () => void;
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
      if (token === undefined) return keys.authenticate(authorization);
      const check = await tokens!.verify(token, origin);
      if (!check.ok) throw new AppError(check.reason);
      // A key's tokens count against its rate limit; the console's own tokens have no key.
      if (check.principal.keyId !== null) await keys.admit(check.principal.keyId);
      return check.principal;
    },
    onRevoked: (listener) => keys.onRevoked(listener),
  };
}

/** True when an `Authorization` value presents an API key (whose answers browsers must not read). */
export function presentsApiKey(authorization: string | undefined): boolean {
  return typeof authorization === 'string' && /^Bearer[ ]+wi_live_/i.test(authorization);
}
