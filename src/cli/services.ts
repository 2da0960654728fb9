/**
 * The CLI's composition root: accounts, credits, keys, console users, usage and the audit trail. No
 * change feeds, no providers, no queue: a short-lived process caches nothing, and gateways hear of its
 * key deletions through their own feeds.
 */
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import { MongoAccountStore } from '../data/accounts.js';
import { MongoAuditStore } from '../data/audit.js';
import { MongoSessionStore, MongoUserStore } from '../data/console.js';
import { MongoKeyStore } from '../data/keys.js';
import { MongoKeyCreditStore } from '../data/key-credits.js';
import { AuditLog } from '../domain/audit/service.js';
import type { PasswordHasher } from '../domain/console/passwords.js';
import { UserService } from '../domain/console/users.js';
import { TeamService } from '../domain/team/members.js';
import { MongoTeamStore } from '../data/team.js';
import { CreditService } from '../domain/credits/service.js';
import { LowCreditsAlerts } from '../domain/webhooks/low-credits.js';
import { MongoLowCreditsStore } from '../data/low-credits.js';
import { createKeyServices, type KeyManager } from '../domain/keys/index.js';
import { UsageService } from '../domain/usage/service.js';
import { MongoUsageStore } from '../data/usage.js';
import { argon2Hasher } from '../providers/passwords/argon2.js';

export interface AdminServices {
  readonly credits: CreditService;
  readonly keys: KeyManager;
  readonly audit: AuditLog;
  /** Usage per account, key (or console), service and day. */
  readonly usage: UsageService;
  readonly users: UserService;
  /** Memberships: `member add`. */
  readonly team: TeamService;
  close(): Promise<void>;
}

export async function buildAdminServices(deps: { connection: Connection; host?: string; passwordHasher?: PasswordHasher }): Promise<AdminServices> {
  const { connection } = deps;
  const accountStore = new MongoAccountStore(connection);
  const keyStore = new MongoKeyStore(connection);
  const auditStore = new MongoAuditStore(connection);
  const userStore = new MongoUserStore(connection);
  const sessionStore = new MongoSessionStore(connection);
  const usageStore = new MongoUsageStore(connection);
  await Promise.all([accountStore, keyStore, auditStore, userStore, sessionStore, usageStore].map((store) => store.init()));
  // A grant re-arms `credits.low`. The CLI runs no queue, so the alert has no publisher: an event it
  // writes (only in a race with a charge) stays on the account, and a worker's webhook sweep publishes it.
  const alerts = new LowCreditsAlerts({ store: new MongoLowCreditsStore(connection) });
  const credits = new CreditService({
    accounts: accountStore,
    audit: auditStore,
    host: deps.host ?? hostname(),
    onBalanceChanged: (accountId, balance, state) => alerts.observe(accountId, balance, state),
    keyCredits: new MongoKeyCreditStore(connection),
    heldCredits: accountStore,
  });
  const keys = createKeyServices({ keys: keyStore, accounts: accountStore, audit: auditStore });
  const teamStore = new MongoTeamStore(connection);
  const team = new TeamService({ memberships: teamStore, accounts: teamStore, endSessions: (userId, accountId) => sessionStore.deleteForMember(userId, accountId), audit: auditStore });
  const users = new UserService({ users: userStore, sessions: sessionStore, accounts: accountStore, hasher: deps.passwordHasher ?? argon2Hasher, audit: auditStore, owners: team });
  return { credits, keys: keys.manager, audit: new AuditLog({ store: auditStore, accounts: accountStore }), usage: new UsageService({ store: usageStore }), users, team, close: () => keys.close() };
}
