/** Audit trail entries (kept 90 days by a TTL index; exported per account as JSON lines). */
export const AUDIT_EVENTS = [
  'account.created',
  'key.created',
  'key.deleted',
  'key.updated',
  'key.rolled',
  'credits.granted',
  'credits.refunded',
  'user.created',
  'user.deleted',
  'console.signed_in',
  'console.sign_in_failed',
  'console.signed_out',
  'console.session_ended',
  'client_token.created',
  'member.invited',
  'member.invitation_revoked',
  'member.joined',
  'member.removed',
  'member.role_changed',
  'member.left',
  'account.2fa_requirement_changed',
  'user.password_changed',
  'user.password_reset',
  'user.2fa_enabled',
  'user.2fa_disabled',
] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

/** Who did it and from where: a console/CLI user, an API request, or a worker. */
export interface AuditActor {
  /** e.g. `cli:alice`, `worker`, `gateway`. */
  actor: string;
  /** IP address of the requester; null when not over the network (CLI, workers). */
  ip: string | null;
  /** Host name of the machine that performed the change. */
  host: string;
}

export interface AuditEntryInput extends AuditActor {
  event: AuditEvent;
  /** Null only for a failed console sign-in with an email no user has. */
  accountId: string | null;
  /** The requester's user agent (console events). */
  userAgent?: string | null;
  keyId?: string | null;
  keyPrefix?: string | null;
  /** Credits granted or refunded. */
  amount?: number | null;
  /** The credit operation id: the entry of an idempotent operation is written once, whatever the retries. */
  opId?: string | null;
  details?: Record<string, unknown> | null;
}

export interface AuditEntry extends Required<Omit<AuditEntryInput, 'details'>> {
  id: string;
  details: Record<string, unknown> | null;
  createdAt: Date;
}

export interface AuditStore {
  /** Appends an entry; with an opId, at most one entry per (account, event, opId). */
  record(entry: AuditEntryInput, at: Date): Promise<void>;
  /** The account's entries, oldest first. */
  listForAccount(accountId: string): AsyncIterable<AuditEntry>;
  /** The account's entries matching the filter, newest first (the console's audit log and its exports). */
  query(accountId: string, filter: AuditFilter): AsyncIterable<AuditEntry>;
}

export interface AuditFilter {
  events?: readonly AuditEvent[];
  /** Inclusive lower bound on createdAt. */
  from?: Date;
  /** Exclusive upper bound on createdAt. */
  to?: Date;
  limit?: number;
}
