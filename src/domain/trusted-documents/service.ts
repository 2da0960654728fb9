/**
 * Trusted documents (CONTRACT "The GraphQL door", trusted documents): the operations an account's
 * front-end was built with, registered from Apollo's persisted query manifest
 * (`@apollo/generate-persisted-query-manifest`). A client token minted with `trustedDocumentsOnly`
 * runs only these; every other caller may still send any document.
 */
import { createHash } from 'node:crypto';
import { AppError, invalid } from '../errors.js';

export const MAX_TRUSTED_DOCUMENTS = 1000;
export const MANIFEST_FORMAT = 'apollo-persisted-query-manifest';
const OPERATION_TYPES = ['query', 'mutation', 'subscription'] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export interface TrustedDocumentRecord {
  accountId: string;
  /** SHA-256 (hex) of `body`: what Apollo's persisted query extension sends as `sha256Hash`. */
  id: string;
  name: string;
  type: OperationType;
  body: string;
  createdAt: Date;
}

export type TrustedDocumentSummary = Omit<TrustedDocumentRecord, 'accountId' | 'body'>;

export interface TrustedDocumentStore {
  /** Inserts the documents whose id the account has not registered yet; returns how many were new. */
  insertNew(documents: readonly TrustedDocumentRecord[]): Promise<number>;
  /** Which of `ids` the account has registered. */
  registered(accountId: string, ids: readonly string[]): Promise<Set<string>>;
  count(accountId: string): Promise<number>;
  list(accountId: string): Promise<TrustedDocumentSummary[]>;
  body(accountId: string, id: string): Promise<string | null>;
  delete(accountId: string, id: string): Promise<boolean>;
}

/**
 * What the GraphQL door says of a document body: the single operation it holds (a manifest entry is
 * one operation and its fragments), or why it is not a valid document for the schema.
 */
export type DocumentCheck = (body: string) => { ok: true; type: OperationType; name: string | null } | { ok: false; message: string };

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

const HASH = /^[0-9a-f]{64}$/;

export class TrustedDocuments {
  constructor(private readonly deps: { store: TrustedDocumentStore; now?: () => Date }) {}

  /**
   * Registers a manifest's operations: all of them or, when any is wrong (a malformed entry, an id that
   * is not its body's SHA-256, a body that is not a valid document, one operation past the limit),
   * none, with a 400 that names the operation. Ids already registered stay as they are.
   */
  async register(accountId: string, manifest: unknown, check: DocumentCheck): Promise<{ registered: number; total: number }> {
    const operations = manifestOperations(manifest);
    const createdAt = this.deps.now?.() ?? new Date();
    const documents: TrustedDocumentRecord[] = [];
    const seen = new Set<string>();
    operations.forEach((op, i) => {
      const at = `operations[${i}]`;
      if (typeof op !== 'object' || op === null) throw invalid(at, `${at} must be an object with id, name, type and body`);
      const { id, name, type, body } = op as Record<string, unknown>;
      const label = typeof name === 'string' && name ? `${at} (${name.slice(0, 100)})` : at;
      if (typeof body !== 'string' || !body.trim()) throw invalid(`${at}.body`, `${label}: body must be a GraphQL document`);
      if (typeof id !== 'string' || !HASH.test(id)) throw invalid(`${at}.id`, `${label}: id must be the SHA-256 of body (64 lowercase hex characters)`);
      if (id !== sha256Hex(body)) throw invalid(`${at}.id`, `${label}: id is not the SHA-256 of body`);
      if (typeof type !== 'string' || !(OPERATION_TYPES as readonly string[]).includes(type)) throw invalid(`${at}.type`, `${label}: type must be one of ${OPERATION_TYPES.join(', ')}`);
      const checked = check(body);
      if (!checked.ok) throw invalid(`${at}.body`, `${label}: body is not a valid document for this schema: ${checked.message}`);
      if (checked.type !== type) throw invalid(`${at}.type`, `${label}: type is ${type} but the document's operation is a ${checked.type}`);
      if ((name ?? null) !== null && typeof name !== 'string') throw invalid(`${at}.name`, `${label}: name must be a string`);
      if (seen.has(id)) return;
      seen.add(id);
      documents.push({ accountId, id, name: typeof name === 'string' ? name : (checked.name ?? ''), type: checked.type, body, createdAt });
    });
    const known = documents.length ? await this.deps.store.registered(accountId, documents.map((d) => d.id)) : new Set<string>();
    const fresh = documents.filter((d) => !known.has(d.id));
    const before = await this.deps.store.count(accountId);
    if (before + fresh.length > MAX_TRUSTED_DOCUMENTS) {
      throw invalid('operations', `an account may register at most ${MAX_TRUSTED_DOCUMENTS} documents: ${before} are registered and this manifest adds ${fresh.length}`);
    }
    const registered = fresh.length ? await this.deps.store.insertNew(fresh) : 0;
    return { registered, total: before + registered };
  }

  list(accountId: string): Promise<TrustedDocumentSummary[]> {
    return this.deps.store.list(accountId);
  }

  async delete(accountId: string, id: unknown): Promise<void> {
    if (typeof id !== 'string' || !HASH.test(id) || !(await this.deps.store.delete(accountId, id))) throw new AppError('document_not_found');
  }

  /**
   * The body a `trustedDocumentsOnly` token may run for this request: the registered document with the
   * hash it sent, or with the SHA-256 of the text it sent. Null: not registered (document_not_trusted).
   */
  async trusted(accountId: string, request: { query?: string | null; sha256Hash?: string | null }): Promise<string | null> {
    const id = typeof request.query === 'string' && request.query ? sha256Hex(request.query) : request.sha256Hash;
    if (typeof id !== 'string' || !HASH.test(id)) return null;
    if (request.sha256Hash && request.sha256Hash !== id) return null;
    return this.deps.store.body(accountId, id);
  }
}

function manifestOperations(manifest: unknown): unknown[] {
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) throw invalid('body', 'body must be a persisted query manifest object');
  const m = manifest as Record<string, unknown>;
  if (m.format !== MANIFEST_FORMAT) throw invalid('format', `format must be "${MANIFEST_FORMAT}"`);
  if (m.version !== 1) throw invalid('version', 'version must be 1');
  if (!Array.isArray(m.operations)) throw invalid('operations', 'operations must be an array');
  if (m.operations.length > MAX_TRUSTED_DOCUMENTS) throw invalid('operations', `operations may hold at most ${MAX_TRUSTED_DOCUMENTS} entries`);
  return m.operations;
}
