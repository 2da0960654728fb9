import { Schema, type Connection, type Model } from 'mongoose';

/** Stored shape of a cached definition (collection `definition_cache`); `_id` = `<provider>\u0000<keyword>`. */
export interface DefinitionCacheDoc {
  _id: string;
  provider: string;
  keyword: string;
  definition: string;
  createdAt: Date;
  /** Removed by MongoDB's TTL monitor after this time; reads ignore expired entries it has not removed yet. */
  expiresAt: Date;
}

const definitionCacheSchema = new Schema<DefinitionCacheDoc>(
  {
    _id: { type: String },
    provider: { type: String, required: true },
    keyword: { type: String, required: true },
    definition: { type: String, required: true },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'definition_cache', versionKey: false },
);
definitionCacheSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

export function definitionCacheModel(connection: Connection): Model<DefinitionCacheDoc> {
  return (
    (connection.models.DefinitionCache as Model<DefinitionCacheDoc> | undefined) ??
    connection.model<DefinitionCacheDoc>('DefinitionCache', definitionCacheSchema)
  );
}
