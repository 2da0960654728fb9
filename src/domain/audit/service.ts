import { invalid } from '../errors.js';
import { AUDIT_EVENTS, type AuditEntry, type AuditEvent, type AuditStore } from './types.js';

/** A UTC day given as `YYYY-MM-DD` (or a Date): its midnight. */
export function parseDay(field: string, value: unknown): Date {
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value;
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const d = new Date(`${value}T00:00:00.000Z`);
    if (!Number.isNaN(d.getTime()) && d.toISOString().startsWith(value)) return d;
  }
  throw invalid(field, `${field} must be a date (YYYY-MM-DD)`);
}

export interface AuditSearch {
  /** One event name, or empty for all. */
  event?: unknown;
  /** First UTC day (inclusive). */
  from?: unknown;
  /** Last UTC day (inclusive). */
  to?: unknown;
}

/** Reading the audit trail (the console's log and exports, the CLI's compliance export). Entries are written by the services that act. */
export class AuditLog {
  constructor(private readonly deps: { store: AuditStore; accounts: { find(id: string): Promise<unknown> } }) {}

  /** The account's entries of the last 90 days, oldest first. */
  async *exportForAccount(accountId: unknown): AsyncIterable<AuditEntry> {
    if (typeof accountId !== 'string' || !/^[0-9a-fA-F]{24}$/.test(accountId)) throw invalid('account', 'account must be a 24-character hex account id');
    const id = accountId.toLowerCase();
    if (!(await this.deps.accounts.find(id))) throw invalid('account', 'account must be the id of an existing account');
    yield* this.deps.store.listForAccount(id);
  }

  /** Validates a search: an event name of the catalog (or none) and a day range, to inclusive. */
  parseSearch(input: AuditSearch, now = new Date()): { events: AuditEvent[]; from: Date; to: Date } {
    const event = input.event === undefined || input.event === '' ? null : input.event;
    if (event !== null && !AUDIT_EVENTS.includes(event as AuditEvent)) throw invalid('event', `event must be one of ${AUDIT_EVENTS.join(', ')}`);
    const today = new Date(Math.floor(now.getTime() / 86_400_000) * 86_400_000);
    const to = input.to === undefined || input.to === '' ? today : parseDay('to', input.to);
    const from = input.from === undefined || input.from === '' ? new Date(to.getTime() - 29 * 86_400_000) : parseDay('from', input.from);
    if (from > to) throw invalid('from', 'from must not be after to');
    return { events: event ? [event as AuditEvent] : [], from, to };
  }

  /** The account's entries matching the search, newest first (at most `limit`; 0: all). */
  search(accountId: string, input: AuditSearch, limit = 0): AsyncIterable<AuditEntry> {
    const { events, from, to } = this.parseSearch(input);
    return this.deps.store.query(accountId, { events, from, to: new Date(to.getTime() + 86_400_000), limit });
  }
}
