/**
 * Roles and what each may do in the console: the contract's table ("Accounts, sign-up and teams"),
 * written once. Every console route declares the action it needs (src/console/routes/types.ts), the
 * edge refuses a role without it before anything is read, pages ask `can()` to hide what a role may
 * not use, and the Explorer's token scopes follow it. test/console/role-matrix.test.ts walks it.
 */
import { CLIENT_SCOPES, type ClientScope } from '../client-tokens/scopes.js';

export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

const EVERYONE: readonly Role[] = ROLES;
const BUILDERS: readonly Role[] = ['owner', 'admin', 'developer'];
const MANAGERS: readonly Role[] = ['owner', 'admin'];
const OWNERS: readonly Role[] = ['owner'];

/** Action → the roles allowed to take it. */
export const PERMISSIONS = {
  /** See Overview, Usage, Audit log, Jobs, API keys, Webhooks, Team. */
  view: EVERYONE,
  /** What a person does to their own sign-in: sessions, password, two-factor, switching and leaving accounts. */
  self: EVERYONE,
  'keys.manage': BUILDERS,
  'webhooks.manage': BUILDERS,
  'jobs.cancel': BUILDERS,
  'playground.use': BUILDERS,
  'explorer.mutate': BUILDERS,
  /** Invite and remove members, change roles (never to or from owner), revoke invitations. */
  'members.manage': MANAGERS,
  'billing.manage': MANAGERS,
  /** Make or unmake owners (invite, promote, demote, remove one). */
  'owners.manage': OWNERS,
  'account.require2fa': OWNERS,
} as const satisfies Record<string, readonly Role[]>;

export type Action = keyof typeof PERMISSIONS;
export const ACTIONS = Object.keys(PERMISSIONS) as Action[];

export function can(role: Role, action: Action): boolean {
  return (PERMISSIONS[action] as readonly Role[]).includes(role);
}

/** The roles a member of `role` may give (or take away) through invitations and role changes. */
export function assignableRoles(role: Role): Role[] {
  if (!can(role, 'members.manage')) return [];
  return ROLES.filter((r) => r !== 'owner' || can(role, 'owners.manage'));
}

/** The Explorer's client token: every scope for a role that may make changes, `read` only for a viewer. */
export function explorerScopes(role: Role): ClientScope[] {
  return can(role, 'explorer.mutate') ? [...CLIENT_SCOPES] : ['read'];
}
