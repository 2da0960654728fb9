import type { ClientMeta, ConsoleCaller, SessionCaller, SessionResolver } from '../console/sessions.js';
import type { AccountTeamStore, MembershipStore } from './ports.js';

/**
 * What the edge asks of every console request: the session (SessionService), then the user's role in
 * the session's current account, read on every request so that a role change or a removal holds at
 * once. A session whose user is no longer a member of its account is no session.
 */
export class MemberSessions implements SessionResolver {
  constructor(
    private readonly deps: {
      sessions: { resume(token: string, meta: ClientMeta): Promise<SessionCaller | null> };
      memberships: Pick<MembershipStore, 'membershipsOf'>;
      accounts: Pick<AccountTeamStore, 'settings' | 'names'>;
    },
  ) {}

  async resume(token: string, meta: ClientMeta): Promise<ConsoleCaller | null> {
    const session = await this.deps.sessions.resume(token, meta);
    return session ? this.callerOf(session) : null;
  }

  async callerOf(session: SessionCaller): Promise<ConsoleCaller | null> {
    const accountId = session.principal.accountId;
    const [user, settings] = await Promise.all([this.deps.memberships.membershipsOf(session.principal.userId), this.deps.accounts.settings(accountId)]);
    const membership = user?.memberships.find((m) => m.accountId === accountId);
    if (!user || !membership || !settings) return null;
    // Names are read only for people in several accounts (the header's switcher).
    const names = user.memberships.length > 1 ? await this.deps.accounts.names(user.memberships.map((m) => m.accountId)) : new Map([[accountId, settings.name]]);
    const accounts = user.memberships.filter((m) => names.has(m.accountId)).map((m) => ({ id: m.accountId, name: names.get(m.accountId)! }));
    return { ...session, role: membership.role, accounts, mustSetUp2fa: settings.require2fa && !user.has2fa };
  }
}
