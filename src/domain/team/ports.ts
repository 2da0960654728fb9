/** What the team services need from storage: memberships on users, team settings on accounts. */
import type { Membership } from '../console/records.js';
import type { Role } from './permissions.js';

/** One member of an account, as the Team page lists them. */
export interface MemberRecord {
  userId: string;
  email: string;
  role: Role;
  joinedAt: Date;
  /** The user has two-factor authentication on. */
  has2fa: boolean;
}

export interface MembershipStore {
  /** The account's members, oldest first. */
  members(accountId: string): Promise<MemberRecord[]>;
  member(accountId: string, userId: string): Promise<MemberRecord | null>;
  /** Every membership of the user (a user stored before teams reads as the owner of its account). */
  membershipsOf(userId: string): Promise<{ email: string; memberships: Membership[]; has2fa: boolean } | null>;
  userByEmail(email: string): Promise<{ userId: string; email: string } | null>;
  /** Adds the membership unless the user already has one in that account: false then (or no such user). */
  add(userId: string, membership: Membership): Promise<boolean>;
  /** ONE guarded update: the role becomes `to` only while it is `from`. */
  setRole(accountId: string, userId: string, from: Role, to: Role): Promise<boolean>;
  /** ONE guarded update: the membership goes only while its role is `from`. */
  remove(accountId: string, userId: string, from: Role): Promise<boolean>;
  /** Owners of the account, counted from the users (to start the account's owner count). */
  countOwners(accountId: string): Promise<number>;
}

/**
 * Per-account team state, on the account document. `ownerCount` guards the last-owner rule across
 * concurrent requests and instances without transactions: an owner leaves (demotion, removal) only by
 * first taking one from the count with a guarded update that needs two or more; an owner arrives
 * (promotion, a new owner) first on the user, then on the count. A crash between the two steps leaves
 * the count below the real number of owners, never above: the rule can refuse too early, never let the
 * last owner go.
 */
export interface AccountTeamStore {
  /** Name, owner count (null: never counted yet) and the two-factor requirement; null when no such account. */
  settings(accountId: string): Promise<{ name: string; ownerCount: number | null; require2fa: boolean } | null>;
  /** Sets the owner count only if it was never set (idempotent start of the count). */
  startOwnerCount(accountId: string, count: number): Promise<void>;
  /** ONE guarded update: takes one owner off the count only while it is 2 or more. */
  takeOwner(accountId: string): Promise<boolean>;
  giveOwner(accountId: string): Promise<void>;
  /** Takes one owner off the count whatever it is (an operator deletes a user). */
  dropOwner(accountId: string): Promise<void>;
  setRequire2fa(accountId: string, required: boolean): Promise<void>;
  /** Names of these accounts (unknown ids are left out). */
  names(accountIds: readonly string[]): Promise<Map<string, string>>;
}
