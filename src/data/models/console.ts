import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Role } from '../../domain/team/permissions.js';

/** A user's membership of one account, stored in the user's document. */
export interface MembershipDoc {
  accountId: Types.ObjectId;
  role: Role;
  joinedAt: Date;
}

/** Console users (collection `console_users`): unique email, members of one or more accounts. */
export interface ConsoleUserDoc {
  _id: Types.ObjectId;
  /** The account the user was created in. */
  accountId: Types.ObjectId;
  email: string;
  passwordHash: string;
  createdAt: Date;
  /**
   * Absent in documents written before teams: such a user is the owner of `accountId` (read so, and
   * written out by an idempotent step at start-up and before any change to the user's memberships).
   */
  memberships?: MembershipDoc[];
}

/** Console sessions (collection `console_sessions`), keyed by the SHA-256 of the cookie's token. */
export interface ConsoleSessionDoc {
  _id: string;
  userId: Types.ObjectId;
  accountId: Types.ObjectId;
  email: string;
  createdAt: Date;
  lastSeenAt: Date;
  /** The TTL index removes the session at this time (idle or absolute limit, whichever comes first). */
  expiresAt: Date;
  absoluteExpiresAt: Date;
  ip: string | null;
  userAgent: string;
  csrfToken: string;
}

/**
 * Sign-in attempts of one email (hashed) or IP address (collection `signin_throttle`): failures,
 * counted when an attempt is reserved (pending until its password is checked).
 */
export interface SignInThrottleDoc {
  _id: string;
  failures: number;
  /** Absent in documents written before attempts were reserved: read as 0. */
  pending?: number;
  windowStart: Date;
  lockouts: number;
  lockedUntil: Date | null;
  /** Forgotten a day after the last failure (TTL). */
  expiresAt: Date;
}

const userSchema = new Schema<ConsoleUserDoc>(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    email: { type: String, required: true },
    passwordHash: { type: String, required: true },
    createdAt: { type: Date, required: true },
    memberships: {
      type: [new Schema({ accountId: { type: Schema.Types.ObjectId, required: true }, role: { type: String, required: true }, joinedAt: { type: Date, required: true } }, { _id: false })],
      default: undefined,
    },
  },
  { collection: 'console_users', versionKey: false },
);
userSchema.index({ email: 1 }, { unique: true });
userSchema.index({ 'memberships.accountId': 1 });
userSchema.index({ accountId: 1, createdAt: 1 });

const sessionSchema = new Schema<ConsoleSessionDoc>(
  {
    _id: { type: String, required: true },
    userId: { type: Schema.Types.ObjectId, required: true },
    accountId: { type: Schema.Types.ObjectId, required: true },
    email: { type: String, required: true },
    createdAt: { type: Date, required: true },
    lastSeenAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
    absoluteExpiresAt: { type: Date, required: true },
    ip: { type: String, default: null },
    userAgent: { type: String, default: '' },
    csrfToken: { type: String, required: true },
  },
  { collection: 'console_sessions', versionKey: false },
);
sessionSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
sessionSchema.index({ userId: 1, lastSeenAt: -1 });

const throttleSchema = new Schema<SignInThrottleDoc>(
  {
    _id: { type: String, required: true },
    failures: { type: Number, required: true },
    pending: { type: Number, default: 0 },
    windowStart: { type: Date, required: true },
    lockouts: { type: Number, default: 0 },
    lockedUntil: { type: Date, default: null },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'signin_throttle', versionKey: false },
);
throttleSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

export const consoleUserModel = (c: Connection) => model<ConsoleUserDoc>(c, 'ConsoleUser', userSchema);
export const consoleSessionModel = (c: Connection) => model<ConsoleSessionDoc>(c, 'ConsoleSession', sessionSchema);
export const signInThrottleModel = (c: Connection) => model<SignInThrottleDoc>(c, 'SignInThrottle', throttleSchema);
