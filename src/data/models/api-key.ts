import { Schema, Types, type Connection, type Model } from 'mongoose';

/** Stored shape of an API key (collection `api_keys`). The key itself is never stored, only its hash. */
export interface ApiKeyDoc {
  _id: Types.ObjectId;
  accountId: Types.ObjectId;
  name: string;
  /** SHA-256 hex of the full key; unique. */
  hash: string;
  /** First 12 characters of the key, shown in listings. */
  prefix: string;
  createdAt: Date;
  /** Coalesced: written at most once a minute per key. */
  lastUsedAt: Date | null;
  deletedAt: Date | null;
  /** Moves on every change of a setting, so instances without change streams can poll for them. */
  updatedAt: Date;
  // Issue 24. Keys stored before have none of these: no expiry, no limit, every permission.
  expiresAt?: Date | null;
  creditLimit?: number | null;
  /** What the key may still spend; moved by guarded updates only (charges, refunds, refills). */
  creditsLeft?: number | null;
  refill?: 'daily' | 'monthly' | null;
  refilledFor?: string | null;
  rateLimitPerMinute?: number | null;
  permissions?: string[] | null;
  rolledFrom?: Types.ObjectId | null;
  expiringNotifiedAt?: Date | null;
  /**
   * Credits reserved on the key whose account charge is not known to have applied yet: the durable
   * record a sweep settles when the charging process died in between.
   */
  pending?: { op: string; amount: number; at: Date; period: string | null }[];
  /** Refund operation ids already given back to the key (the latest few): a retried refund applies once. */
  refundOps?: string[];
}

export const apiKeyCollectionName = 'api_keys';

const apiKeySchema = new Schema<ApiKeyDoc>(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    name: { type: String, required: true },
    hash: { type: String, required: true },
    prefix: { type: String, required: true },
    createdAt: { type: Date, required: true },
    lastUsedAt: { type: Date, default: null },
    deletedAt: { type: Date, default: null },
    updatedAt: { type: Date, required: true },
    expiresAt: { type: Date, default: null },
    creditLimit: { type: Number, default: null },
    creditsLeft: { type: Number, default: null },
    refill: { type: String, enum: ['daily', 'monthly', null], default: null },
    refilledFor: { type: String, default: null },
    rateLimitPerMinute: { type: Number, default: null },
    permissions: { type: [String], default: undefined },
    rolledFrom: { type: Schema.Types.ObjectId, default: null },
    expiringNotifiedAt: { type: Date, default: null },
    pending: { type: [{ _id: false, op: String, amount: Number, at: Date, period: String }], default: undefined },
    refundOps: { type: [String], default: undefined },
  },
  { collection: apiKeyCollectionName, versionKey: false },
);
apiKeySchema.index({ hash: 1 }, { unique: true });
apiKeySchema.index({ accountId: 1, createdAt: 1 });
apiKeySchema.index({ updatedAt: 1 });
// The sweeps: keys whose expiry is near (key.expiring) and keys with reservations left pending.
apiKeySchema.index({ expiresAt: 1 }, { partialFilterExpression: { expiresAt: { $type: 'date' } } });
apiKeySchema.index({ 'pending.at': 1 }, { sparse: true });

export function apiKeyModel(connection: Connection): Model<ApiKeyDoc> {
  return (connection.models.ApiKey as Model<ApiKeyDoc> | undefined) ?? connection.model<ApiKeyDoc>('ApiKey', apiKeySchema);
}
