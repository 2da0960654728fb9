import { Types, type Connection, type Model } from 'mongoose';
import type { Collection, Document, Filter } from 'mongodb';
import type { Membership, SessionRecord, SessionStore, ThrottleReservation, ThrottleState, ThrottleStore, UserRecord, UserStore } from '../domain/console/records.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';
import {
  consoleSessionModel,
  consoleUserModel,
  signInThrottleModel,
  type ConsoleSessionDoc,
  type ConsoleUserDoc,
  type MembershipDoc,
  type SignInThrottleDoc,
} from './models/console.js';

/** Creates the collection and its indexes (TTL and unique ones included). */
async function prepare<T extends Document>(connection: Connection, m: Model<T>): Promise<Collection<T>> {
  await m.createCollection().catch(ignoreExists);
  await m.createIndexes();
  return nativeCollection<T>(connection, m.collection.collectionName);
}

const DUPLICATE_KEY = 11000;

export class MongoUserStore implements UserStore {
  private collection!: Collection<ConsoleUserDoc>;

  constructor(private readonly connection: Connection) {}

  async init(): Promise<void> {
    this.collection = await prepare(this.connection, consoleUserModel(this.connection));
    await writeOutLegacyMemberships(this.collection);
  }

  async insert(user: Omit<UserRecord, 'id'>): Promise<UserRecord | null> {
    const accountId = toObjectId(user.accountId);
    if (!accountId) throw new Error(`not an account id: ${user.accountId}`);
    const memberships = user.memberships.map((m) => ({ accountId: toObjectId(m.accountId)!, role: m.role, joinedAt: m.joinedAt }));
    if (memberships.some((m) => !m.accountId)) throw new Error('a membership needs an account id');
    const doc: ConsoleUserDoc = { _id: new Types.ObjectId(), accountId, email: user.email, passwordHash: user.passwordHash, createdAt: user.createdAt, memberships };
    try {
      await this.collection.insertOne(doc);
    } catch (err) {
      if ((err as { code?: number }).code === DUPLICATE_KEY) return null;
      throw err;
    }
    return toUser(doc);
  }

  async findByEmail(email: string): Promise<UserRecord | null> {
    const doc = await this.collection.findOne({ email });
    return doc ? toUser(doc) : null;
  }

  async findById(userId: string): Promise<UserRecord | null> {
    const _id = toObjectId(userId);
    const doc = _id ? await this.collection.findOne({ _id }) : null;
    return doc ? toUser(doc) : null;
  }

  async listForAccount(accountId: string): Promise<UserRecord[]> {
    const _id = toObjectId(accountId);
    return _id ? (await this.collection.find(membersOf(_id)).sort({ createdAt: 1 }).toArray()).map(toUser) : [];
  }

  async delete(userId: string): Promise<UserRecord | null> {
    const _id = toObjectId(userId);
    const doc = _id ? await this.collection.findOneAndDelete({ _id }) : null;
    return doc ? toUser(doc) : null;
  }
}

export class MongoSessionStore implements SessionStore {
  private collection!: Collection<ConsoleSessionDoc>;

  constructor(private readonly connection: Connection) {}

  async init(): Promise<void> {
    this.collection = await prepare(this.connection, consoleSessionModel(this.connection));
  }

  async insert(s: SessionRecord): Promise<void> {
    const userId = toObjectId(s.userId);
    const accountId = toObjectId(s.accountId);
    if (!userId || !accountId) throw new Error('a session needs user and account ids');
    const { id, ...rest } = s;
    await this.collection.insertOne({ ...rest, _id: id, userId, accountId });
  }

  async find(id: string): Promise<SessionRecord | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc ? toSession(doc) : null;
  }

  async touch(id: string, lastSeenAt: Date, expiresAt: Date): Promise<void> {
    // Only forward, and never for a session already expired: a late write from a slower request (or
    // another instance) cannot move an expiry back, nor revive an idled-out session.
    await this.collection.updateOne({ _id: id, lastSeenAt: { $lt: lastSeenAt }, expiresAt: { $gt: lastSeenAt } }, { $set: { lastSeenAt, expiresAt } });
  }

  async delete(id: string): Promise<SessionRecord | null> {
    const doc = await this.collection.findOneAndDelete({ _id: id });
    return doc ? toSession(doc) : null;
  }

  async listForUser(userId: string, now: Date): Promise<SessionRecord[]> {
    const _id = toObjectId(userId);
    if (!_id) return [];
    return (await this.collection.find({ userId: _id, expiresAt: { $gt: now } }).sort({ lastSeenAt: -1 }).limit(100).toArray()).map(toSession);
  }

  async deleteForUser(userId: string, except?: string): Promise<number> {
    const _id = toObjectId(userId);
    if (!_id) return 0;
    const res = await this.collection.deleteMany(except ? { userId: _id, _id: { $ne: except } } : { userId: _id });
    return res.deletedCount;
  }

  async deleteForMember(userId: string, accountId: string): Promise<number> {
    const user = toObjectId(userId);
    const account = toObjectId(accountId);
    if (!user || !account) return 0;
    return (await this.collection.deleteMany({ userId: user, accountId: account })).deletedCount;
  }

  async setAccount(id: string, accountId: string): Promise<boolean> {
    const account = toObjectId(accountId);
    if (!account) return false;
    return (await this.collection.updateOne({ _id: id }, { $set: { accountId: account } })).matchedCount === 1;
  }
}

/** Forget a subject's failures this long after the last one. */
const THROTTLE_MEMORY_MS = 24 * 3600_000;

export class MongoThrottleStore implements ThrottleStore {
  private collection!: Collection<SignInThrottleDoc>;

  constructor(private readonly connection: Connection) {}

  async init(): Promise<void> {
    this.collection = await prepare(this.connection, signInThrottleModel(this.connection));
  }

  async get(subject: string): Promise<ThrottleState | null> {
    const doc = await this.collection.findOne({ _id: subject });
    return doc ? toThrottle(doc) : null;
  }

  async reserve(subject: string, at: Date, windowStart: Date, max: number): Promise<ThrottleReservation> {
    const expiresAt = new Date(at.getTime() + THROTTLE_MEMORY_MS);
    const unlocked: Filter<SignInThrottleDoc> = { $or: [{ lockedUntil: null }, { lockedUntil: { $lte: at } }] };
    // Under the limit, or past an expired lock with nothing pending (one attempt at a time, whose
    // failure locks again for longer).
    const allowed: Filter<SignInThrottleDoc> = { $or: [{ failures: { $lt: max } }, { pending: { $not: { $gt: 0 } } }] };
    // Two guarded updates, each atomic: reserve within the current window, or open a new one. A race
    // between the two ends in a duplicate-key insert; then the stored state says why, or we try again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const within = await this.collection.findOneAndUpdate(
        { _id: subject, windowStart: { $gt: windowStart }, $and: [unlocked, allowed] },
        { $inc: { failures: 1, pending: 1 }, $set: { expiresAt } },
      );
      if (within) return { reserved: true };
      try {
        const opened = await this.collection.findOneAndUpdate(
          { _id: subject, windowStart: { $lte: windowStart }, ...unlocked },
          { $set: { failures: 1, pending: 1, windowStart: at, expiresAt }, $setOnInsert: { lockouts: 0, lockedUntil: null } },
          { upsert: true, returnDocument: 'after' },
        );
        if (opened) return { reserved: true };
      } catch (err) {
        if ((err as { code?: number }).code !== DUPLICATE_KEY) throw err;
      }
      const state = await this.get(subject);
      if (state && refuses(state, at, windowStart, max)) return { reserved: false, state };
    }
    throw new Error(`sign-in throttle: could not reserve an attempt of ${subject}`);
  }

  async judgedWrong(subject: string): Promise<ThrottleState | null> {
    const doc = await this.collection.findOneAndUpdate({ _id: subject, pending: { $gt: 0 } }, { $inc: { pending: -1 } }, { returnDocument: 'after' });
    return doc ? toThrottle(doc) : null;
  }

  async release(subject: string): Promise<void> {
    await this.collection.updateOne({ _id: subject, pending: { $gt: 0 } }, { $inc: { failures: -1, pending: -1 } });
  }

  async lock(subject: string, at: Date, until: Date): Promise<void> {
    // Guarded: attempts judged together lock once, not once each (each lock-out doubles the next).
    await this.collection.updateOne({ _id: subject, $or: [{ lockedUntil: null }, { lockedUntil: { $lte: at } }] }, { $set: { lockedUntil: until }, $inc: { lockouts: 1 } });
  }

  async forgive(subject: string): Promise<void> {
    // An update pipeline: failures become the other attempts still pending, in one atomic step.
    await this.collection.updateOne({ _id: subject, pending: { $gt: 0 } }, [
      { $set: { failures: { $subtract: ['$pending', 1] }, pending: { $subtract: ['$pending', 1] }, lockouts: 0, lockedUntil: null } },
    ]);
  }
}

/** Whether a stored state refuses a new attempt (the same conditions as reserve's, read back). */
function refuses(state: ThrottleState, at: Date, windowStart: Date, max: number): boolean {
  if (state.lockedUntil && state.lockedUntil > at) return true;
  return state.windowStart > windowStart && state.failures >= max && state.pending > 0;
}

function toUser(d: ConsoleUserDoc): UserRecord {
  return { id: d._id.toHexString(), accountId: d.accountId.toHexString(), email: d.email, passwordHash: d.passwordHash, createdAt: d.createdAt, memberships: membershipsOf(d) };
}

/** A user's memberships; a user stored before teams is the owner of the account it was created in. */
export function membershipsOf(d: Pick<ConsoleUserDoc, 'accountId' | 'createdAt' | 'memberships'>): Membership[] {
  const stored = d.memberships ?? legacyMemberships(d);
  return stored.map((m) => ({ accountId: m.accountId.toHexString(), role: m.role, joinedAt: m.joinedAt }));
}

function legacyMemberships(d: Pick<ConsoleUserDoc, 'accountId' | 'createdAt'>): MembershipDoc[] {
  return [{ accountId: d.accountId, role: 'owner', joinedAt: d.createdAt }];
}

/** Users who are members of the account, stored before teams or after. */
export function membersOf(accountId: Types.ObjectId): Filter<ConsoleUserDoc> {
  return { $or: [{ 'memberships.accountId': accountId }, { memberships: { $exists: false }, accountId }] };
}

/**
 * Writes out the membership of a user stored before teams (owner of its account): one guarded update
 * per user, a no-op once done, so every instance may run it at start-up, and the team store runs it
 * for one user before changing its memberships (a user written meanwhile by an older release).
 */
export async function writeOutLegacyMemberships(collection: Collection<ConsoleUserDoc>, filter: Filter<ConsoleUserDoc> = {}): Promise<void> {
  for await (const doc of collection.find({ ...filter, memberships: { $exists: false } }, { projection: { accountId: 1, createdAt: 1 } })) {
    await collection.updateOne({ _id: doc._id, memberships: { $exists: false } }, { $set: { memberships: legacyMemberships(doc) } });
  }
}

function toSession(d: ConsoleSessionDoc): SessionRecord {
  return {
    id: d._id,
    userId: d.userId.toHexString(),
    accountId: d.accountId.toHexString(),
    email: d.email,
    createdAt: d.createdAt,
    lastSeenAt: d.lastSeenAt,
    expiresAt: d.expiresAt,
    absoluteExpiresAt: d.absoluteExpiresAt,
    ip: d.ip ?? null,
    userAgent: d.userAgent ?? '',
    csrfToken: d.csrfToken,
  };
}

function toThrottle(d: SignInThrottleDoc): ThrottleState {
  return { failures: d.failures, pending: d.pending ?? 0, windowStart: d.windowStart, lockouts: d.lockouts ?? 0, lockedUntil: d.lockedUntil ?? null };
}
