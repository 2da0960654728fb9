import { invalid } from '../errors.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { AccountStore } from '../credits/records.js';
import { checkNewPassword, normalizeEmail, type PasswordHasher } from './passwords.js';
import type { SessionStore, UserRecord, UserStore } from './records.js';

export interface UserSummary {
  userId: string;
  email: string;
  accountId: string;
  createdAt: Date;
}

/** Console users: several per account, created (as owners of the account) and deleted by the CLI (audited). */
export class UserService {
  constructor(
    private readonly deps: {
      users: UserStore;
      sessions: Pick<SessionStore, 'deleteForUser'>;
      accounts: Pick<AccountStore, 'find'>;
      hasher: PasswordHasher;
      audit: AuditStore;
      /** The account's owner count (src/domain/team/members.ts): started before a new owner is written, then counted. */
      owners: { ensureOwnerCount(accountId: string): Promise<void>; ownerAdded(accountId: string): Promise<void>; ownerDeleted(accountId: string): Promise<void> };
      now?: () => Date;
    },
  ) {}

  async create(accountId: unknown, email: unknown, password: unknown, actor: AuditActor): Promise<UserSummary> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId.trim().toLowerCase()) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    const address = normalizeEmail(email);
    const secret = checkNewPassword(password, address);
    const createdAt = (this.deps.now ?? (() => new Date()))();
    const passwordHash = await this.deps.hasher.hash(secret);
    await this.deps.owners.ensureOwnerCount(account.id);
    const user = await this.deps.users.insert({ accountId: account.id, email: address, passwordHash, createdAt, memberships: [{ accountId: account.id, role: 'owner', joinedAt: createdAt }] });
    if (!user) throw invalid('email', 'email is already used by another console user');
    await this.deps.owners.ownerAdded(account.id);
    await this.deps.audit.record({ ...actor, event: 'user.created', accountId: account.id, details: { userId: user.id, email: user.email } }, createdAt);
    return summary(user);
  }

  /**
   * The first member of a new self-serve account, its owner: the verification link proved the address
   * and the password was checked and hashed at sign-up. Null when the email was taken meanwhile.
   */
  async createOwner(accountId: string, email: string, passwordHash: string, actor: AuditActor): Promise<UserRecord | null> {
    const createdAt = (this.deps.now ?? (() => new Date()))();
    await this.deps.owners.ensureOwnerCount(accountId);
    const user = await this.deps.users.insert({ accountId, email, passwordHash, createdAt, memberships: [{ accountId, role: 'owner', joinedAt: createdAt }] });
    if (!user) return null;
    await this.deps.owners.ownerAdded(accountId);
    await this.deps.audit.record({ ...actor, event: 'user.created', accountId, details: { userId: user.id, email: user.email } }, createdAt);
    return user;
  }

  async list(accountId: unknown): Promise<UserSummary[]> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId.trim().toLowerCase()) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    return (await this.deps.users.listForAccount(account.id)).map(summary);
  }

  /** Deletes the user and ends every session of theirs at once. */
  async delete(userId: unknown, actor: AuditActor): Promise<{ userId: string; sessionsEnded: number }> {
    const id = typeof userId === 'string' ? userId.trim().toLowerCase() : '';
    const found = /^[0-9a-f]{24}$/.test(id) ? await this.deps.users.findById(id) : null;
    // The owner counts go down first: a crash before the deletion leaves them low (safe), never high.
    for (const m of found?.memberships ?? []) if (m.role === 'owner') await this.deps.owners.ownerDeleted(m.accountId);
    const user = found ? await this.deps.users.delete(found.id) : null;
    if (!user) throw invalid('id', 'id must be the id of an existing console user');
    const sessionsEnded = await this.deps.sessions.deleteForUser(user.id);
    await this.deps.audit.record({ ...actor, event: 'user.deleted', accountId: user.accountId, details: { userId: user.id, email: user.email, sessionsEnded } }, new Date());
    return { userId: user.id, sessionsEnded };
  }
}

function summary(u: UserRecord): UserSummary {
  return { userId: u.id, email: u.email, accountId: u.accountId, createdAt: u.createdAt };
}
