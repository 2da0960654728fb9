import { Schema, Types, type Connection, type Model } from 'mongoose';
import { AUDIT_EVENTS, type AuditEvent } from '../../domain/audit/types.js';

/** Audit entries are kept this long, enforced by MongoDB's TTL monitor. */
export const AUDIT_RETENTION_SECONDS = 90 * 24 * 3600;

/** Stored shape of an audit entry (collection `audit_entries`). */
export interface AuditEntryDoc {
  _id: Types.ObjectId | string;
  event: AuditEvent;
  accountId: string | null;
  userAgent?: string | null;
  actor: string;
  ip: string | null;
  host: string;
  keyId: string | null;
  keyPrefix: string | null;
  amount: number | null;
  opId: string | null;
  details: Record<string, unknown> | null;
  createdAt: Date;
}

const auditSchema = new Schema<AuditEntryDoc>(
  {
    // An ObjectId, or `<event>:<accountId>:<opId>` for entries of idempotent credit operations.
    _id: { type: Schema.Types.Mixed },
    event: { type: String, enum: AUDIT_EVENTS, required: true },
    accountId: { type: String, default: null },
    userAgent: { type: String, default: null },
    actor: { type: String, required: true },
    ip: { type: String, default: null },
    host: { type: String, required: true },
    keyId: { type: String, default: null },
    keyPrefix: { type: String, default: null },
    amount: { type: Number, default: null },
    opId: { type: String, default: null },
    details: { type: Schema.Types.Mixed, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'audit_entries', versionKey: false },
);
auditSchema.index({ createdAt: 1 }, { expireAfterSeconds: AUDIT_RETENTION_SECONDS });
auditSchema.index({ accountId: 1, createdAt: 1 });
auditSchema.index({ accountId: 1, event: 1, createdAt: -1 });

export function auditEntryModel(connection: Connection): Model<AuditEntryDoc> {
  return (connection.models.AuditEntry as Model<AuditEntryDoc> | undefined) ?? connection.model<AuditEntryDoc>('AuditEntry', auditSchema);
}
