/**
 * The edge of WebSocket doors, the same rules as for HTTP requests: an upgrade is admitted once
 * (path, Host, the database, shutdown) and refused in the contract's HTTP shape otherwise; the caller
 * is decided at `connection_init` by the same Credentials as HTTP (an API key, or a client token from
 * one of its origins), checked again for every operation, and the connection ends when its key is
 * deleted (on any instance) or its token expires. A subscription is held to its key's permissions as
 * they change (on any instance): one the key may no longer run ends alone with 403 `key_permission`,
 * and the connection stays for what the key may still do. Refused credentials close the socket with 4401, which
 * graphql-ws clients treat as final (4403 they retry for half a minute); a database outage with 1013.
 */
import { setMaxListeners } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { CloseCode } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { AppError } from '../domain/errors.js';
import { rateLimitedError } from '../domain/keys/rate-limit.js';
import type { KeyPermission } from '../domain/keys/permissions.js';
import type { RevocationReason } from '../domain/keys/revocations.js';
import type { Logger } from '../domain/logger.js';
import type { KeyGrant, Principal } from '../domain/principal.js';
import type { CredentialCheck, Credentials } from './credentials.js';
import { databaseUnavailable } from './database.js';
import { toAppError } from './errors.js';
import { hostRefusal, type HostPolicy } from './host.js';

export interface UpgradePolicy {
  path: string;
  hostAllowed: HostPolicy;
  databaseDown: () => boolean;
}

/** Undefined when the upgrade may go on; else the error to answer it with (an HTTP response). */
export function upgradeRefusal(req: IncomingMessage, policy: UpgradePolicy): AppError | undefined {
  const path = (req.url ?? '').split('?')[0];
  if (path !== policy.path) return new AppError('route_not_found');
  // Subscriptions build image URLs from the Host too.
  const host = hostRefusal(req, policy.hostAllowed);
  if (host) return host;
  return policy.databaseDown() ? databaseUnavailable() : undefined;
}

/** How a refusal or an ending closes a socket: a code clients understand and the contract's text. */
export function closeFor(err: AppError): { code: number; reason: string } {
  if (err.httpStatus === 401 || err.httpStatus === 403) return { code: CloseCode.Unauthorized, reason: err.message };
  // 1013 Try Again Later: the database (or a limit) refused us for now; the credential may be fine.
  if (err.spec.retryable && err.spec.graphqlCode !== 'INTERNAL_SERVER_ERROR') return { code: 1013, reason: err.message };
  return { code: 1011, reason: 'Internal server error' };
}

/** The caller of one connection. */
export interface SocketCaller {
  readonly principal: Principal;
  /** Aborted, with the AppError as reason, when the credential ends (key deleted, token expired). */
  readonly signal: AbortSignal;
  /**
   * For each operation: the caller as the credential stands now (its key's settings may have changed),
   * or the refusal (nothing runs). Counts the operation's first unit of the rate limit.
   */
  recheck(): Promise<CredentialCheck>;
  /**
   * A subscription's own signal, for an admitted operation that needs `needs` of its key: aborted with
   * the connection's ending, or alone, with 403 `key_permission` as its reason, when the key loses one
   * of them. Already aborted when the key's last announced grant lacks one (a change announced while
   * the operation was being admitted). `release` when the operation ends.
   */
  guard(needs: readonly KeyPermission[]): GuardedOperation;
  /** Operations running now (an ending waits a moment for their errors to go out). */
  active: number;
}

export interface GuardedOperation {
  readonly signal: AbortSignal;
  release(): void;
}

/** What a connection is told of its key, on any instance. */
interface KeyListener {
  revoked(reason: RevocationReason): void;
  changed(grant: KeyGrant): void;
}

/** Listeners of a connection's signal besides its subscriptions' (none today; room for a few). */
const EXTRA_SIGNAL_LISTENERS = 10;

/** How long an ending gives subscriptions to send their UNAUTHENTICATED error before the socket closes. */
const ENDING_GRACE_MS = 200;

export class SocketCallers {
  /** Key id → the connections it opened, directly or through its client tokens (console tokens have none). */
  private readonly byKey = new Map<string, Set<KeyListener>>();
  private readonly unsubscribe: () => void;
  private readonly unsubscribeGrants: () => void;

  constructor(
    private readonly deps: {
      credentials: Credentials;
      databaseDown: () => boolean;
      log: Pick<Logger, 'error'>;
      /** GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET: each open subscription listens to the connection's signal. */
      maxSubscriptions: number;
    },
  ) {
    this.unsubscribe = deps.credentials.onRevoked((keyId, reason) => {
      for (const listener of this.byKey.get(keyId) ?? []) listener.revoked(reason);
    });
    this.unsubscribeGrants = deps.credentials.onGrantChanged((keyId, grant) => {
      for (const listener of this.byKey.get(keyId) ?? []) listener.changed(grant);
    });
  }

  /**
   * `connection_init`: the caller, or undefined after closing the socket with the refusal's code.
   * `request` is the upgrade request (its Origin binds client tokens).
   */
  async connect(socket: WebSocket, connectionParams: Readonly<Record<string, unknown>> | undefined, request: IncomingMessage): Promise<SocketCaller | undefined> {
    const given = connectionParams?.Authorization ?? connectionParams?.authorization;
    const authorization = typeof given === 'string' ? given : undefined;
    const origin = request.headers.origin;
    const authenticate = async (): Promise<Principal> => {
      if (this.deps.databaseDown()) throw databaseUnavailable();
      const { principal, rateLimit } = await this.deps.credentials.graphql(authorization, origin);
      if (rateLimit && !rateLimit.ok) throw rateLimitedError(rateLimit);
      // A page's socket is not bound by CORS: an API key from a browser is refused outright.
      if (!principal.token && origin !== undefined) throw new AppError('api_key_in_browser');
      return principal;
    };
    let principal: Principal;
    try {
      principal = await authenticate();
    } catch (err) {
      const refusal = toAppError(err);
      if (refusal.code === 'internal_error') this.deps.log.error({ err }, 'graphql-ws: authentication failed unexpectedly');
      const { code, reason } = closeFor(refusal);
      socket.close(code, reason);
      return undefined;
    }

    const ending = new AbortController();
    // One abort listener per open subscription is the design, bounded by the per-socket cap: Node's
    // default of 10 would report an 11th as a possible leak (MaxListenersExceededWarning).
    setMaxListeners(this.deps.maxSubscriptions + EXTRA_SIGNAL_LISTENERS, ending.signal);
    /** Open subscriptions and what each needs of the key. */
    const guarded = new Set<{ needs: readonly KeyPermission[]; controller: AbortController }>();
    /** The key's grant as last announced while this connection was open (none yet: as admitted). */
    let announced: KeyGrant | undefined;
    const caller: SocketCaller = {
      principal,
      signal: ending.signal,
      active: 0,
      recheck: async () => {
        if (ending.signal.aborted) return { ok: false, error: ending.signal.reason as AppError };
        try {
          return { ok: true, principal: await authenticate() };
        } catch (err) {
          const refusal = toAppError(err);
          if (refusal.code === 'internal_error') throw err;
          return { ok: false, error: refusal };
        }
      },
      guard: (needs) => {
        const controller = new AbortController();
        const op = { needs, controller };
        const ended = () => controller.abort(ending.signal.reason);
        const release = () => {
          guarded.delete(op);
          ending.signal.removeEventListener('abort', ended);
        };
        if (ending.signal.aborted) ended();
        // Admitted from a read that a change announced meanwhile may have overtaken: held to that too.
        else if (announced && !allowed(announced, needs)) controller.abort(new AppError('key_permission'));
        else {
          ending.signal.addEventListener('abort', ended, { once: true });
          guarded.add(op);
        }
        return { signal: controller.signal, release };
      },
    };
    const end = (reason: AppError) => {
      if (ending.signal.aborted) return;
      ending.abort(reason);
      const { code, reason: text } = closeFor(reason);
      // Subscriptions end with an UNAUTHENTICATED error first; then the connection goes.
      setTimeout(() => socket.close(code, text), caller.active ? ENDING_GRACE_MS : 0).unref();
    };
    const listener: KeyListener = {
      revoked: (reason) => end(new AppError(principal.token ? 'invalid_client_token' : reason === 'expired' ? 'api_key_expired' : 'invalid_api_key')),
      // Only the subscriptions the key may no longer run end; the connection stays.
      changed: (grant) => {
        announced = grant;
        for (const op of guarded) {
          if (allowed(grant, op.needs)) continue;
          guarded.delete(op);
          op.controller.abort(new AppError('key_permission'));
        }
      },
    };
    const keyId = principal.keyId;
    let set: Set<KeyListener> | undefined;
    if (keyId !== null) {
      set = this.byKey.get(keyId);
      if (!set) this.byKey.set(keyId, (set = new Set()));
      set.add(listener);
    }
    const expiry = principal.token ? expiryTimer(principal.token.expiresAt, () => end(new AppError('client_token_expired'))) : undefined;
    socket.once('close', () => {
      clearTimeout(expiry);
      if (!set || keyId === null) return;
      set.delete(listener);
      if (set.size === 0 && this.byKey.get(keyId) === set) this.byKey.delete(keyId);
    });
    return caller;
  }

  dispose(): void {
    this.unsubscribe();
    this.unsubscribeGrants();
  }
}

function allowed(grant: KeyGrant, needs: readonly KeyPermission[]): boolean {
  return needs.every((permission) => grant.permissions.includes(permission));
}

/** setTimeout caps delays at 2^31-1 ms; a token lives an hour at most, but stay safe. */
function expiryTimer(at: Date, fire: () => void): NodeJS.Timeout {
  const delay = Math.min(Math.max(0, at.getTime() - Date.now()), 2 ** 31 - 1);
  const timer = setTimeout(fire, delay);
  timer.unref();
  return timer;
}
