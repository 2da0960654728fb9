/**
 * What a client token may do. `read` covers `me`, `job`, `jobs` and `jobStatus`; `lookup` and
 * `generate` the charging operations of the same names (`generate` also `cancelJob`: who may start
 * jobs may stop them). A caller with an API key may do everything.
 */
export const CLIENT_SCOPES = ['lookup', 'generate', 'read'] as const;
export type ClientScope = (typeof CLIENT_SCOPES)[number];

export function isClientScope(value: unknown): value is ClientScope {
  return typeof value === 'string' && (CLIENT_SCOPES as readonly string[]).includes(value);
}

/** True when the caller may use `scope`: API keys and console users always, client tokens per their scopes. */
export function allows(principal: { token?: { scopes: readonly ClientScope[] } }, scope: ClientScope): boolean {
  return !principal.token || principal.token.scopes.includes(scope);
}
