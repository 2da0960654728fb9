import { AppError, invalid } from '../errors.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { KeyGrant, Principal } from '../principal.js';
import { generateToken, hashToken, isWellFormedToken } from './format.js';
import type { ClientTokenRecord, ClientTokenStore } from './records.js';
import { isExactOrigin, parseMintRequest, TOKEN_TTL, type MintRequest } from './request.js';
import { explorerScopes, type Role } from '../team/permissions.js';
import { CLIENT_SCOPES, type ClientScope } from './scopes.js';
import { keyHas, keyMayRun } from '../operations/access.js';


/** How long a console token's member, once read, is taken as it was (CONTRACT: within 5 s on every instance). */
export const MEMBER_RECHECK_MS = 2_000;

/** A minted token as shown once. */
export interface MintedToken {
  token: string;
  expiresAt: Date;
  origins: string[];
  scopes: ClientScope[];
  maxCredits: number | null;
  trustedDocumentsOnly: boolean;
}

/** Expected outcomes of checking a token are values; the edge turns a refusal into the contract's error. */
export type TokenCheck =
  | { ok: true; principal: Principal }
  | { ok: false; reason: 'invalid_client_token' | 'client_token_expired' | 'origin_not_allowed' };

export interface ClientTokenDeps {
  store: ClientTokenStore;
  audit: AuditStore;
  /** The key's grant while it exists, is not deleted and has not expired, as every instance sees it (the key verifier's rule); else null. */
  liveKey(keyId: string): Promise<KeyGrant | null>;
  /**
   * A console token's member as every instance sees them now: their role in the account while they are
   * a member and (for tokens minted in a session) that session is alive; else null.
   */
  liveMember(accountId: string, userId: string, sessionId: string | null): Promise<Role | null>;
  now?: () => Date;
}

/**
 * Short-lived credentials for browser apps, minted by an API key on the app's backend: bound to web
 * origins, scoped, expiring, optionally capped in credits, ended with their key. Records never change
 * once written (the budget's counter aside), so they are cached by hash; the key's liveness is not.
 */
export class ClientTokens {
  private readonly now: () => Date;
  private readonly cache = new Map<string, ClientTokenRecord>();
  /** A console token's member as last read, per token, for MEMBER_RECHECK_MS at most. */
  private readonly members = new Map<string, { role: Role | null; readAt: number }>();

  constructor(private readonly deps: ClientTokenDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * An API key's mint (REST and GraphQL): a client token or a console user cannot mint this way. The
   * token gets only scopes its key has (asking for more is a 400; the default is the key's own).
   */
  async mint(principal: Principal, input: unknown, actor: AuditActor): Promise<MintedToken> {
    if (principal.token || principal.keyId === null) throw new AppError('api_key_required');
    if (!keyMayRun(principal, 'createClientToken')) throw new AppError('key_permission');
    const keyScopes = CLIENT_SCOPES.filter((scope) => keyHas(principal, scope));
    return this.create(principal, parseMintRequest(input, keyScopes), actor);
  }

  /**
   * The console's own token (the explorer's): for a signed-in user, bound to the console's origin,
   * the scopes of their role, 15 minutes; the page mints a new one whenever it loads. It belongs to its
   * member: it stops when they are removed, their session ends (sign-out, a password change or reset),
   * and does only what their role allows now (verify()). Not audited: the member created nothing by
   * opening a page, and the session it serves is audited at sign-in.
   */
  async mintForConsole(caller: { accountId: string; userId: string; role: Role; sessionId: string }, origin: string): Promise<MintedToken> {
    if (!isExactOrigin(origin)) throw invalid('origin', 'origin must be a web origin');
    return this.create(
      { accountId: caller.accountId, keyId: null, userId: caller.userId },
      { origins: [origin], scopes: explorerScopes(caller.role), ttlSeconds: TOKEN_TTL.default, maxCredits: null, trustedDocumentsOnly: false },
      null,
      caller.sessionId,
    );
  }

  /** Stores a new token; `actor` is who is audited as creating it (null: the console's own, not audited). */
  private async create(principal: Principal, request: MintRequest, actor: AuditActor | null, sessionId: string | null = null): Promise<MintedToken> {
    const token = generateToken();
    const createdAt = this.now();
    const expiresAt = new Date(createdAt.getTime() + request.ttlSeconds * 1000);
    const record = await this.deps.store.insert({
      accountId: principal.accountId,
      keyId: principal.keyId,
      userId: principal.keyId === null ? (principal.userId ?? null) : null,
      hash: hashToken(token),
      origins: request.origins,
      scopes: request.scopes,
      maxCredits: request.maxCredits,
      trustedDocumentsOnly: request.trustedDocumentsOnly,
      sessionId,
      createdAt,
      expiresAt,
    });
    if (actor) {
      await this.deps.audit.record(
        {
          ...actor,
          event: 'client_token.created',
          accountId: principal.accountId,
          keyId: principal.keyId,
          details: { tokenId: record.id, origins: request.origins, scopes: request.scopes, ttlSeconds: request.ttlSeconds, maxCredits: request.maxCredits, trustedDocumentsOnly: request.trustedDocumentsOnly },
        },
        createdAt,
      );
    }
    return { token, expiresAt, origins: request.origins, scopes: request.scopes, maxCredits: request.maxCredits, trustedDocumentsOnly: request.trustedDocumentsOnly };
  }

  /** Checks a `wi_tok_` value presented from `origin` (the request's Origin header). */
  async verify(token: string, origin: string | undefined): Promise<TokenCheck> {
    if (!isWellFormedToken(token)) return { ok: false, reason: 'invalid_client_token' };
    const hash = hashToken(token);
    const record = this.cache.get(hash) ?? (await this.load(hash));
    if (!record) return { ok: false, reason: 'invalid_client_token' };
    if (record.expiresAt.getTime() <= this.now().getTime()) return { ok: false, reason: 'client_token_expired' };
    const key = record.keyId !== null ? await this.deps.liveKey(record.keyId) : null;
    if (record.keyId !== null && !key) return { ok: false, reason: 'invalid_client_token' };
    if (origin === undefined || !record.origins.includes(origin)) return { ok: false, reason: 'origin_not_allowed' };
    let scopes = record.scopes;
    if (record.keyId === null && record.userId !== null) {
      const role = await this.memberRole(record);
      if (!role) return { ok: false, reason: 'invalid_client_token' };
      const allowed = explorerScopes(role);
      scopes = scopes.filter((scope) => allowed.includes(scope));
    }
    return {
      ok: true,
      principal: {
        accountId: record.accountId,
        keyId: record.keyId,
        ...(record.userId ? { userId: record.userId } : {}),
        token: { tokenId: record.id, origins: record.origins, scopes, maxCredits: record.maxCredits, trustedDocumentsOnly: record.trustedDocumentsOnly, expiresAt: record.expiresAt },
        ...key,
      },
    };
  }

  /**
   * The console token's member, read again at most every MEMBER_RECHECK_MS: a removal, a demotion or an
   * ended session reaches every instance within that (plus one request).
   */
  private async memberRole(record: ClientTokenRecord): Promise<Role | null> {
    const nowMs = this.now().getTime();
    const known = this.members.get(record.id);
    if (known && nowMs - known.readAt < MEMBER_RECHECK_MS) return known.role;
    const role = await this.deps.liveMember(record.accountId, record.userId!, record.sessionId);
    if (this.members.size >= 10_000) for (const [id, m] of this.members) if (nowMs - m.readAt >= MEMBER_RECHECK_MS) this.members.delete(id);
    if (this.members.size < 10_000) this.members.set(record.id, { role, readAt: nowMs });
    return role;
  }

  private async load(hash: string): Promise<ClientTokenRecord | null> {
    const record = await this.deps.store.findByHash(hash);
    if (!record) return null;
    if (this.cache.size >= 10_000) {
      // Expired entries first; else the oldest.
      const nowMs = this.now().getTime();
      for (const [h, r] of this.cache) if (r.expiresAt.getTime() <= nowMs) this.cache.delete(h);
      if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(hash, record);
    return record;
  }
}
