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
  /** Moves on every change, so instances without change streams can poll for deletions. */
  updatedAt: Date;
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
  },
  { collection: apiKeyCollectionName, versionKey: false },
);
apiKeySchema.index({ hash: 1 }, { unique: true });
apiKeySchema.index({ accountId: 1, createdAt: 1 });
apiKeySchema.index({ updatedAt: 1 });

export function apiKeyModel(connection: Connection): Model<ApiKeyDoc> {
  return (connection.models.ApiKey as Model<ApiKeyDoc> | undefined) ?? connection.model<ApiKeyDoc>('ApiKey', apiKeySchema);
}
