/**
 * Who is calling, decided once for every door: by API key (REST), by API key or client token
 * (`/graphql`; the WebSocket door asks the same Credentials at connection_init) or by console session
 * (cookie). A route says which it needs with `config: { auth: 'apiKey' | 'apiKeyOrToken' | 'session' }`,
 * and a console route what its caller's role must allow with `config.permission`;
 * the onRequest hook authenticates before the body is read, so a 401 comes before 415/400/413. REST
 * requests carry the RateLimit headers of their key's shared rate limit (429 over it). The
 * doors stay apart: an API route never looks at cookies and a console route never looks at the
 * Authorization header.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import type { ConsoleCaller, SessionResolver } from '../domain/console/sessions.js';
import { rateLimitedError, type RateLimitOutcome } from '../domain/keys/rate-limit.js';
import { can, type Action } from '../domain/team/permissions.js';
import { keyMayRun } from '../domain/operations/access.js';
import { isOperationName, type OperationName } from '../domain/operations/catalog.js';
import type { Principal } from '../domain/principal.js';
import type { Credentials } from './credentials.js';
import { originVerdict } from './csrf.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key's (or client token's) caller, on routes with `auth: 'apiKey' | 'apiKeyOrToken'`. */
    principal: Principal | null;
    /** The signed-in console user, on routes with `auth: 'session'` (or 'optional-session'). */
    consoleCaller: ConsoleCaller | null;
  }
  interface FastifyContextConfig {
    auth?: 'apiKey' | 'apiKeyOrToken' | 'session' | 'optional-session';
    /** What a console route lets its caller do: their role must allow it (src/domain/team/permissions.ts). */
    permission?: Action;
    /** What an `auth: 'apiKey'` route runs, as the operation catalog names it (its permission and price). */
    operation?: OperationName;
  }
}

/** The console's session cookie: `__Host-` prefixed (and Secure) when served over HTTPS (src/edge/https.ts). */
export function sessionCookieName(request: Pick<FastifyRequest, 'servedOverHttps'>): string {
  return request.servedOverHttps ? '__Host-console_session' : 'console_session';
}

export interface EdgeAuthDeps {
  credentials: Pick<Credentials, 'apiKey' | 'graphql'>;
  sessions?: SessionResolver;
  /** Origins besides the request's own that console forms may be posted from (PUBLIC_BASE_URL's). */
  consoleOrigins?: readonly string[];
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Declares the request properties (decorateRequest) and authenticates every route that asks. */
export function registerEdgeAuth(app: FastifyInstance, deps: EdgeAuthDeps): void {
  // A REST route an API key calls runs an operation of the catalog, or it would run unpriced and unpermitted.
  app.addHook('onRoute', (route) => {
    const config = route.config as { auth?: string; operation?: unknown } | undefined;
    if (config?.auth === 'apiKey' && !isOperationName(config.operation)) {
      throw new Error(`${String(route.method)} ${route.url}: an API-key route names its operation of the catalog (config.operation)`);
    }
  });
  app.decorateRequest('principal', null);
  app.decorateRequest('consoleCaller', null);
  app.addHook('onRequest', async function authenticate(request, reply) {
    reply.header('x-request-id', request.id);
    // Read once: each read of routeOptions builds a new object.
    const config = request.routeOptions.config;
    const auth = config.auth;
    if (auth === 'apiKey' || auth === 'apiKeyOrToken') {
      const admission =
        auth === 'apiKey' ? await deps.credentials.apiKey(request.headers.authorization) : await deps.credentials.graphql(request.headers.authorization, request.headers.origin);
      // One unit per request, counted across every instance; the headers go on the answer, 429 or not.
      applyRateLimit(reply, admission.rateLimit);
      // The key's permissions, before the body is read: 401 → 429 → 403 → 400 → 402 (docs/keys.md).
      const operation = config.operation;
      if (operation && !keyMayRun(admission.principal, operation)) throw new AppError('key_permission');
      request.principal = admission.principal;
    } else if (auth === 'session' || auth === 'optional-session') {
      // Refused before anything is read or touched: a cross-site request changes nothing.
      if (!SAFE_METHODS.has(request.method) && originVerdict(request, deps.consoleOrigins ?? []) === 'cross-site') throw new AppError('cross_site_request');
      request.consoleCaller = await resumeSession(request, deps.sessions, (header) => app.parseCookie(header));
      if (!request.consoleCaller && auth === 'session') throw new AppError('not_signed_in');
      // Refused before the body is read: a role that may not do it changes nothing.
      const permission = config.permission;
      if (request.consoleCaller && permission && !can(request.consoleCaller.role, permission)) throw new AppError('role_forbidden');
    }
  });
}

/** The rate limit's headers on the answer, and its refusal (429 with Retry-After) when it refused. */
export function applyRateLimit(reply: FastifyReply, rateLimit: RateLimitOutcome | null): void {
  if (!rateLimit) return;
  reply.headers(rateLimitHeaders(rateLimit));
  if (!rateLimit.ok) throw rateLimitedError(rateLimit);
}

async function resumeSession(
  request: FastifyRequest,
  sessions: SessionResolver | undefined,
  parseCookie: (header: string) => Record<string, string | undefined>,
): Promise<ConsoleCaller | null> {
  // Parsed here, only for console routes: API requests never pay for (or look at) cookies.
  const token = parseCookie(request.headers.cookie ?? '')[sessionCookieName(request)];
  if (!sessions || typeof token !== 'string' || token === '') return null;
  return sessions.resume(token, { ip: request.ip, userAgent: String(request.headers['user-agent'] ?? '') });
}
