import type { AuditActor, AuditStore } from '../audit/types.js';
import { normalizeEmail } from '../console/passwords.js';
import { AppError, invalid } from '../errors.js';
import { can, isRole, type Role } from './permissions.js';
import type { AccountTeamStore, MemberRecord, MembershipStore } from './ports.js';

/** A member acting in the console (or an operator at the CLI): their account, user and role, and the audit fields. */
export interface TeamActor {
  accountId: string;
  /** Null for the CLI. */
  userId: string | null;
  role: Role;
  audit: AuditActor & { userAgent?: string };
}

export interface TeamView {
  accountName: string;
  members: MemberRecord[];
  require2fa: boolean;
}

/** Ends a member's console sessions in one account (they were removed from it, or left). */
export type EndMemberSessions = (userId: string, accountId: string) => Promise<number>;

/**
 * An account's members: role changes, removal, leaving, joining, and the owners' two-factor
 * requirement. The role rules are the permission table's (permissions.ts), checked here again
 * whatever the door; the last-owner rule holds under concurrency through the account's owner count.
 */
export class TeamService {
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      memberships: MembershipStore;
      accounts: AccountTeamStore;
      endSessions: EndMemberSessions;
      audit: AuditStore;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  async view(accountId: string): Promise<TeamView> {
    const [settings, members] = await Promise.all([this.deps.accounts.settings(accountId), this.deps.memberships.members(accountId)]);
    return { accountName: settings?.name ?? '', members, require2fa: settings?.require2fa ?? false };
  }

  async changeRole(actor: TeamActor, userId: unknown, role: unknown): Promise<MemberRecord> {
    this.require(actor, 'members.manage');
    if (!isRole(role)) throw invalid('role', 'role must be one of owner, admin, developer, viewer');
    const target = await this.memberOf(actor.accountId, userId);
    if (target.role === role) return target;
    if (target.role === 'owner' || role === 'owner') this.require(actor, 'owners.manage');
    if (target.role === 'owner') {
      await this.ownerLeaves(actor.accountId, () => this.deps.memberships.setRole(actor.accountId, target.userId, 'owner', role));
    } else {
      if (role === 'owner') await this.ensureOwnerCount(actor.accountId);
      if (!(await this.deps.memberships.setRole(actor.accountId, target.userId, target.role, role))) throw new AppError('member_not_found');
      if (role === 'owner') await this.deps.accounts.giveOwner(actor.accountId);
    }
    await this.record(actor, 'member.role_changed', { userId: target.userId, email: target.email, from: target.role, to: role });
    return { ...target, role };
  }

  /** Removes a member (their keys stay) and ends their sessions in the account at once. */
  async remove(actor: TeamActor, userId: unknown): Promise<MemberRecord> {
    this.require(actor, 'members.manage');
    const target = await this.memberOf(actor.accountId, userId);
    if (target.role === 'owner') this.require(actor, 'owners.manage');
    await this.leaveAs(actor.accountId, target);
    await this.record(actor, 'member.removed', { userId: target.userId, email: target.email, role: target.role });
    return target;
  }

  /** The actor leaves the account (any member but its last owner) and their sessions in it end. */
  async leave(actor: TeamActor & { userId: string }): Promise<MemberRecord> {
    const me = await this.memberOf(actor.accountId, actor.userId);
    await this.leaveAs(actor.accountId, me);
    await this.record(actor, 'member.left', { userId: me.userId, email: me.email, role: me.role });
    return me;
  }

  /**
   * Adds a user to an account (an accepted invitation, or the CLI). False when they are a member
   * already; a new owner is counted after their membership is written (see AccountTeamStore).
   */
  async join(accountId: string, user: { userId: string; email: string }, role: Role, actor: AuditActor & { userAgent?: string }, details: Record<string, unknown> = {}): Promise<boolean> {
    if (role === 'owner') await this.ensureOwnerCount(accountId);
    const added = await this.deps.memberships.add(user.userId, { accountId, role, joinedAt: this.now() });
    if (!added) return false;
    if (role === 'owner') await this.deps.accounts.giveOwner(accountId);
    await this.deps.audit.record({ ...actor, event: 'member.joined', accountId, details: { userId: user.userId, email: user.email, role, ...details } }, this.now());
    return true;
  }

  /** An owner who requires it must have it: otherwise the requirement would lock them out of the Team page. */
  /** The CLI's `member add`: an existing user joins another account with a role. */
  async addByEmail(accountId: unknown, email: unknown, role: unknown, actor: AuditActor): Promise<{ userId: string; email: string; accountId: string; role: Role }> {
    const id = typeof accountId === 'string' ? accountId.trim().toLowerCase() : '';
    if (!/^[0-9a-f]{24}$/.test(id) || !(await this.deps.accounts.settings(id))) throw invalid('account', 'account must be the id of an existing account');
    if (!isRole(role)) throw invalid('role', 'role must be one of owner, admin, developer, viewer');
    const user = await this.deps.memberships.userByEmail(normalizeEmail(email));
    if (!user) throw invalid('email', 'email must be the email of an existing console user (user create makes one)');
    if (!(await this.join(id, user, role, actor, { via: 'cli' }))) throw new AppError('already_member');
    return { userId: user.userId, email: user.email, accountId: id, role };
  }

  async setRequire2fa(actor: TeamActor, required: boolean): Promise<void> {
    this.require(actor, 'account.require2fa');
    if (required && !(actor.userId && (await this.deps.memberships.membershipsOf(actor.userId))?.has2fa)) {
      throw new AppError('two_factor_required', { message: 'Set up two-factor authentication for yourself in Settings before requiring it of everyone' });
    }
    await this.deps.accounts.setRequire2fa(actor.accountId, required);
    await this.record(actor, 'account.2fa_requirement_changed', { required });
  }

  /**
   * Before an owner is added outside this service (a new user created as owner): the count must exist
   * before the owner does, or starting it later would count them twice. Pair with `ownerAdded`.
   */
  async ensureOwnerCount(accountId: string): Promise<void> {
    const settings = await this.deps.accounts.settings(accountId);
    if (settings && settings.ownerCount === null) await this.deps.accounts.startOwnerCount(accountId, await this.deps.memberships.countOwners(accountId));
  }

  ownerAdded(accountId: string): Promise<void> {
    return this.deps.accounts.giveOwner(accountId);
  }

  /** An owner is deleted outside this service (the CLI's `user delete`), before the user goes. */
  ownerDeleted(accountId: string): Promise<void> {
    return this.deps.accounts.dropOwner(accountId);
  }

  private async leaveAs(accountId: string, target: MemberRecord): Promise<void> {
    if (target.role === 'owner') {
      await this.ownerLeaves(accountId, () => this.deps.memberships.remove(accountId, target.userId, 'owner'));
    } else if (!(await this.deps.memberships.remove(accountId, target.userId, target.role))) {
      throw new AppError('member_not_found');
    }
    await this.deps.endSessions(target.userId, accountId);
  }

  /**
   * An owner stops being one: first one owner is taken off the account's count (refused when it is
   * the last), then the user changes; if the user changed meanwhile (a concurrent request did it), the
   * count gets its owner back.
   */
  private async ownerLeaves(accountId: string, change: () => Promise<boolean>): Promise<void> {
    await this.ensureOwnerCount(accountId);
    if (!(await this.deps.accounts.takeOwner(accountId))) throw new AppError('last_owner');
    let changed = false;
    try {
      changed = await change();
    } finally {
      if (!changed) await this.deps.accounts.giveOwner(accountId);
    }
    if (!changed) throw new AppError('member_not_found', { message: 'That member changed meanwhile; reload the page' });
  }

  private async memberOf(accountId: string, userId: unknown): Promise<MemberRecord> {
    const member = typeof userId === 'string' && /^[0-9a-f]{24}$/.test(userId) ? await this.deps.memberships.member(accountId, userId) : null;
    if (!member) throw new AppError('member_not_found');
    return member;
  }

  private require(actor: TeamActor, action: Parameters<typeof can>[1]): void {
    if (!can(actor.role, action)) throw new AppError('role_forbidden');
  }

  private record(actor: TeamActor, event: 'member.role_changed' | 'member.removed' | 'member.left' | 'account.2fa_requirement_changed', details: Record<string, unknown>) {
    return this.deps.audit.record({ ...actor.audit, event, accountId: actor.accountId, details }, this.now());
  }
}
