import { randomBytes } from 'node:crypto';
import type { AuditActor } from '../audit/types.js';
import type { UserService } from '../console/users.js';
import type { CreditService } from '../credits/service.js';
import type { KeyManager } from '../keys/manager.js';
import type { SeedClaimStore } from './ports.js';

export const DEMO_CREDITS = 100;
export const DEMO_EMAIL = 'demo@example.com';
/** A claim still seeding this long after it was made was abandoned (seeding takes well under a second). */
export const SEED_LEASE_MS = 60_000;

export interface DemoAccount {
  key: string;
  email: string;
  password: string;
}

/**
 * A newcomer can call the API and sign in to the console at once: on an empty database, one account
 * with a key and a console user with a random password (returned to print once). Instances started
 * together on one database race for one claim document (an insert with a fixed _id): only the one
 * whose insert succeeds seeds. An instance that dies half way leaves its claim `seeding`; once the
 * lease has passed, the next start takes it over and finishes the demo (new key and password, on the
 * same account when it was created), so the database never stays half-seeded.
 */
export class DemoSeeder {
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      claims: SeedClaimStore;
      credits: Pick<CreditService, 'isEmpty' | 'createAccount'>;
      keys: Pick<KeyManager, 'create' | 'list' | 'delete'>;
      users: Pick<UserService, 'create' | 'list' | 'delete'>;
      actor: AuditActor;
      /** Names this instance in the claim. */
      holder: string;
      leaseMs?: number;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /** The demo's secrets when this instance seeded it; null when there was nothing to do. */
  async seed(): Promise<DemoAccount | null> {
    const { claims, holder } = this.deps;
    const existing = await claims.get();
    if (!existing) {
      // Data from before there were claims, or a database in use: never seeded.
      if (!(await this.deps.credits.isEmpty())) return null;
      if (!(await claims.claim(holder, this.now()))) return null;
      return this.create(null);
    }
    if (existing.state === 'done') return null;
    if (this.now().getTime() - existing.claimedAt.getTime() < (this.deps.leaseMs ?? SEED_LEASE_MS)) return null;
    if (!(await claims.takeOver(existing.claimedAt, holder, this.now()))) return null;
    return this.create(existing.accountId);
  }

  private async create(abandonedAccountId: string | null): Promise<DemoAccount> {
    const { claims, holder, actor } = this.deps;
    let accountId = abandonedAccountId;
    if (accountId) {
      // What the abandoned attempt made but never printed is replaced.
      for (const k of await this.deps.keys.list(accountId)) if (!k.deletedAt) await this.deps.keys.delete(k.id, actor);
      for (const u of await this.deps.users.list(accountId)) await this.deps.users.delete(u.userId, actor);
    } else {
      accountId = (await this.deps.credits.createAccount('Demo account', DEMO_CREDITS, actor)).id;
      await claims.recordAccount(holder, accountId);
    }
    const key = await this.deps.keys.create(accountId, 'demo key', actor);
    const password = randomBytes(12).toString('base64url');
    const user = await this.deps.users.create(accountId, DEMO_EMAIL, password, actor);
    await claims.finish(holder, this.now());
    return { key: key.key, email: user.email, password };
  }
}
