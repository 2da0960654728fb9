/**
 * Who may run an operation, asked by every door: the key's permissions (an API key's own, or the key
 * that minted a client token) and, for a client token, its scopes. Console callers (no key) may run
 * everything their door offers.
 */
import { allows } from '../client-tokens/scopes.js';
import type { KeyPermission } from '../keys/permissions.js';
import type { Principal } from '../principal.js';
import { OPERATIONS, type OperationName, type OperationSpec } from './catalog.js';

/** True when the caller's key has the operation's permission (a key stored without a list has every one). */
export function keyMayRun(principal: Pick<Principal, 'permissions'>, name: OperationName): boolean {
  return keyHas(principal, OPERATIONS[name].permission);
}

/** True when the caller's key has `permission` (console callers, with no key, have every one). */
export function keyHas(principal: Pick<Principal, 'permissions'>, permission: KeyPermission): boolean {
  return !principal.permissions || principal.permissions.includes(permission);
}

/**
 * The refusal of a caller's client token for an operation, if any: a scope it lacks
 * (`scope_not_allowed`), or an operation no token may run (`api_key_required`).
 */
export function tokenRefusal(principal: Pick<Principal, 'token'>, name: OperationName): 'scope_not_allowed' | 'api_key_required' | null {
  if (!principal.token) return null;
  const scope: OperationSpec['scope'] = OPERATIONS[name].scope;
  if (scope === null) return 'api_key_required';
  return allows(principal, scope) ? null : 'scope_not_allowed';
}
