import { invalid } from '../errors.js';
import type { AuditEntry, AuditStore } from './types.js';

/** Reading the audit trail (compliance export). Entries are written by the services that act. */
export class AuditLog {
  constructor(private readonly deps: { store: AuditStore; accounts: { find(id: string): Promise<unknown> } }) {}

  /** The account's entries of the last 90 days, oldest first. */
  async *exportForAccount(accountId: unknown): AsyncIterable<AuditEntry> {
    if (typeof accountId !== 'string' || !/^[0-9a-fA-F]{24}$/.test(accountId)) throw invalid('account', 'account must be a 24-character hex account id');
    const id = accountId.toLowerCase();
    if (!(await this.deps.accounts.find(id))) throw invalid('account', 'account must be the id of an existing account');
    yield* this.deps.store.listForAccount(id);
  }
}
