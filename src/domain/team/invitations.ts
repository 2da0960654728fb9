import type { AuditActor, AuditStore } from '../audit/types.js';
import { checkNewPassword, normalizeEmail, type PasswordHasher } from '../console/passwords.js';
import type { UserStore } from '../console/records.js';
import { composeEmail, tokenLink } from '../email/compose.js';
import type { EmailSender } from '../email/ports.js';
import { emailThrottledError, type EmailThrottle } from '../email/throttle.js';
import { AppError, invalid } from '../errors.js';
import type { LinkTokenRecord, LinkTokens } from '../links/service.js';
import type { TeamActor, TeamService } from './members.js';
import { can, isRole, type Role } from './permissions.js';
import type { AccountTeamStore, MembershipStore } from './ports.js';

/** The contract: an invitation link works once, for 7 days. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

export interface PendingInvitation {
  id: string;
  email: string;
  role: Role;
  expiresAt: Date;
}

/** An invitation link as its page shows it, before it is used. */
export interface OpenInvitation {
  accountId: string;
  accountName: string;
  email: string;
  role: Role;
  /** Whether a user with that email exists (they sign in to join; a new one sets a password). */
  userExists: boolean;
}

/** What accepting as a new person gave: the new user, or (someone made the user meanwhile) a sign-in first. */
export type NewMemberOutcome = { kind: 'created'; user: { id: string; accountId: string; email: string } } | { kind: 'sign_in' };

type Actor = AuditActor & { userAgent?: string };

/**
 * Invitations: a single-use link (src/domain/links) emailed to the address, valid 7 days, whose
 * payload holds the account, the address and the role. The pending list is the account's unused
 * links; revoking uses one up. Accepting consumes the link with one guarded update, so of two
 * concurrent uses exactly one joins.
 */
export class Invitations {
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      links: LinkTokens;
      sender: EmailSender;
      throttle: EmailThrottle;
      team: Pick<TeamService, 'join' | 'ensureOwnerCount' | 'ownerAdded'>;
      memberships: Pick<MembershipStore, 'member'>;
      accounts: Pick<AccountTeamStore, 'settings'>;
      users: Pick<UserStore, 'findByEmail' | 'insert'>;
      hasher: PasswordHasher;
      audit: AuditStore;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  async invite(actor: TeamActor & { email: string }, input: { email: unknown; role: unknown }, baseUrl: string): Promise<PendingInvitation> {
    if (!can(actor.role, 'members.manage')) throw new AppError('role_forbidden');
    const email = normalizeEmail(input.email);
    if (!isRole(input.role)) throw invalid('role', 'role must be one of owner, admin, developer, viewer');
    const role = input.role;
    if (role === 'owner' && !can(actor.role, 'owners.manage')) throw new AppError('role_forbidden');
    const existing = await this.deps.users.findByEmail(email);
    if (existing && (await this.deps.memberships.member(actor.accountId, existing.id))) throw new AppError('already_member');
    const admission = await this.deps.throttle.admit(email, actor.audit.ip);
    if (!admission.ok) throw emailThrottledError(admission.retryAfterSeconds);
    const account = await this.deps.accounts.settings(actor.accountId);
    // A new invitation replaces an earlier one to the same address: one live link per person.
    for (const old of await this.deps.links.listUsable('invitation', { accountId: actor.accountId, email })) await this.deps.links.revoke('invitation', old.id, { accountId: actor.accountId });
    const issued = await this.deps.links.issue('invitation', { accountId: actor.accountId, email, role, invitedBy: actor.email }, INVITATION_TTL_MS);
    const link = tokenLink(baseUrl, '/console/invitations/accept', issued.token);
    const name = account?.name ?? 'an account';
    await this.deps.sender.send(
      composeEmail({
        to: email,
        subject: `You are invited to ${name} on credit-gateway`,
        intro: [`${actor.email} invited you to join “${name}” on credit-gateway as ${article(role)} ${role}.`],
        action: { label: 'Accept the invitation', url: link },
        outro: ['The link works once and expires in 7 days. If you did not expect this invitation, ignore this email.'],
      }),
    );
    await this.deps.audit.record({ ...actor.audit, event: 'member.invited', accountId: actor.accountId, details: { email, role, invitationId: issued.id } }, this.now());
    return { id: issued.id, email, role, expiresAt: issued.expiresAt };
  }

  async pending(accountId: string): Promise<PendingInvitation[]> {
    return (await this.deps.links.listUsable('invitation', { accountId })).map(pendingOf).filter((p) => p !== null);
  }

  async revoke(actor: TeamActor, invitationId: unknown): Promise<PendingInvitation> {
    if (!can(actor.role, 'members.manage')) throw new AppError('role_forbidden');
    const pending = (await this.pending(actor.accountId)).find((p) => p.id === invitationId);
    if (!pending) throw new AppError('invitation_not_found');
    if (pending.role === 'owner' && !can(actor.role, 'owners.manage')) throw new AppError('role_forbidden');
    const revoked = await this.deps.links.revoke('invitation', pending.id, { accountId: actor.accountId });
    if (!revoked) throw new AppError('invitation_not_found');
    await this.deps.audit.record({ ...actor.audit, event: 'member.invitation_revoked', accountId: actor.accountId, details: { email: pending.email, role: pending.role, invitationId: pending.id } }, this.now());
    return pending;
  }

  /** The link's invitation, without using it; null when it is unknown, used, revoked or expired. */
  async open(token: unknown): Promise<OpenInvitation | null> {
    const peeked = await this.deps.links.peek('invitation', token);
    const invitation = peeked.ok ? invitationOf(peeked.record) : null;
    if (!invitation) return null;
    const account = await this.deps.accounts.settings(invitation.accountId);
    if (!account) return null;
    return { ...invitation, accountName: account.name, userExists: (await this.deps.users.findByEmail(invitation.email)) !== null };
  }

  /** A signed-in user whose email the link was sent to joins (the link is used up). */
  async acceptAsUser(token: unknown, user: { userId: string; email: string }, actor: Actor): Promise<OpenInvitation> {
    const invitation = await this.open(token);
    if (!invitation || invitation.email !== user.email) throw new AppError('invitation_invalid');
    if (await this.deps.memberships.member(invitation.accountId, user.userId)) throw new AppError('already_member');
    if (!(await this.deps.links.consume('invitation', token)).ok) throw new AppError('invitation_invalid');
    await this.deps.team.join(invitation.accountId, user, invitation.role, actor, { via: 'invitation' });
    return invitation;
  }

  /**
   * A person new to the gateway sets a password and joins: the link proves the address. The link is
   * used up before the user is written, so two concurrent uses make one user.
   */
  async acceptAsNewUser(token: unknown, password: unknown, actor: Actor): Promise<NewMemberOutcome> {
    const invitation = await this.open(token);
    if (!invitation) throw new AppError('invitation_invalid');
    if (invitation.userExists) return { kind: 'sign_in' };
    const passwordHash = await this.deps.hasher.hash(checkNewPassword(password, invitation.email));
    if (!(await this.deps.links.consume('invitation', token)).ok) throw new AppError('invitation_invalid');
    const joinedAt = this.now();
    if (invitation.role === 'owner') await this.deps.team.ensureOwnerCount(invitation.accountId);
    const user = await this.deps.users.insert({
      accountId: invitation.accountId,
      email: invitation.email,
      passwordHash,
      createdAt: joinedAt,
      memberships: [{ accountId: invitation.accountId, role: invitation.role, joinedAt }],
    });
    if (!user) {
      // The address got a user meanwhile (another door): they join, and sign in with their own password.
      const existing = await this.deps.users.findByEmail(invitation.email);
      if (existing) await this.deps.team.join(invitation.accountId, { userId: existing.id, email: existing.email }, invitation.role, actor, { via: 'invitation' });
      return { kind: 'sign_in' };
    }
    if (invitation.role === 'owner') await this.deps.team.ownerAdded(invitation.accountId);
    await this.deps.audit.record({ ...actor, event: 'user.created', accountId: invitation.accountId, details: { userId: user.id, email: user.email, via: 'invitation' } }, joinedAt);
    await this.deps.audit.record({ ...actor, event: 'member.joined', accountId: invitation.accountId, details: { userId: user.id, email: user.email, role: invitation.role, via: 'invitation' } }, joinedAt);
    return { kind: 'created', user: { id: user.id, accountId: invitation.accountId, email: user.email } };
  }
}

function invitationOf(record: LinkTokenRecord): { accountId: string; email: string; role: Role } | null {
  const { accountId, email, role } = record.payload;
  return typeof accountId === 'string' && typeof email === 'string' && isRole(role) ? { accountId, email, role } : null;
}

function pendingOf(record: LinkTokenRecord): PendingInvitation | null {
  const invitation = invitationOf(record);
  return invitation ? { id: record.id, email: invitation.email, role: invitation.role, expiresAt: record.expiresAt } : null;
}

function article(role: Role): string {
  return role === 'owner' || role === 'admin' ? 'an' : 'a';
}
