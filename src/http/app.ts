/**
 * buildApp(): the one HTTP server (Fastify 5) for REST and GraphQL. It never listens: main.ts and the
 * test harness do.
 *
 * How to plug in (other modules):
 *  - REST routes: write a Fastify plugin in src/http/routes/<name>.ts, `export default` a
 *    `RouteModule` (see ./routes/types.ts) and add it to ROUTE_MODULES below with the SERVICES entry
 *    that enables it ('images' | 'definitions'; `null` = always). Routes that need an API key set
 *    `config: { auth: true }`: the onRequest hook below authenticates before the body is read (so 401
 *    comes before 415/400/413) and puts the caller on `request.principal`.
 *  - Errors: throw AppError (src/domain/errors.ts); the error handler shapes `{error, code, requestId}`.
 *  - GraphQL: registered through `registerGraphqlHook` below when the services it needs exist.
 *  - Image URLs: `baseUrlOf(request)` gives the base address (PUBLIC_BASE_URL or the request's Host).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { AppError, isAppError, type ErrorCode } from '../domain/errors.js';
import type { Principal } from '../domain/principal.js';
import { isDatabaseUnavailableError } from '../data/connection.js';
import type { Services } from '../services.js';
import definitionRoutes from './routes/definitions.js';
import healthRoutes from './routes/health.js';
import imageRoutes from './routes/images.js';
import type { RouteModule } from './routes/types.js';
import { registerGraphQL } from './graphql.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller, on routes with `config: { auth: true }`. */
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** Require `Authorization: Bearer <key>` (checked in onRequest, before the body is parsed). */
    auth?: boolean;
  }
}

/** Route modules and the SERVICES entry that enables each (null: always on). */
const ROUTE_MODULES: { service: Config['SERVICES'][number] | null; module: RouteModule }[] = [
  { service: null, module: healthRoutes },
  { service: 'definitions', module: definitionRoutes },
  { service: 'images', module: imageRoutes },
];

export interface BuildAppOptions {
  config: Config;
  services: Services;
  /** A pino logger, or `false` for none; default: Fastify's own (pino) at config.LOG_LEVEL. */
  logger?: FastifyBaseLogger | false;
  /** Where Fastify's own logger writes JSON lines (default stdout). */
  logStream?: { write(line: string): void };
}

/** Seconds clients are asked to wait after a 503 (database or provider unreachable). */
const RETRY_AFTER_SECONDS = 5;

export async function buildApp(opts: BuildAppOptions): Promise<FastifyInstance> {
  const { config, services } = opts;
  const app = Fastify({
    ...(opts.logger
      ? { loggerInstance: opts.logger }
      : { logger: opts.logger === false || config.LOG_LEVEL === 'silent' ? false : { level: config.LOG_LEVEL, ...(opts.logStream ? { stream: opts.logStream } : {}) } }),
    bodyLimit: config.BODY_LIMIT_BYTES,
    // A client's X-Request-Id is kept when it is sane, so calls can be traced across systems.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true },
  }) as unknown as FastifyInstance;

  // JSON only: without this Fastify would accept text/plain bodies, and the contract wants 415.
  app.removeContentTypeParser(['text/plain']);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (request.routeOptions.config.auth) {
      request.principal = await services.keys.authenticate(request.headers.authorization);
    }
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, request, new AppError('route_not_found')));
  app.setErrorHandler((err: FastifyError, request, reply) => sendError(reply, request, toAppError(err, request)));

  const enabled = new Set(config.SERVICES);
  for (const { service, module } of ROUTE_MODULES) {
    if (service === null || enabled.has(service)) await app.register(module, { config, services, baseUrlOf: (r: FastifyRequest) => baseUrlOf(config, r) });
  }
  await registerGraphqlHook(app, config, services);
  return app;
}

/**
 * GraphQL: `/graphql` over HTTP and WebSocket, once the services it needs are in `Services` (the
 * GraphQL module wires itself here; see src/http/graphql.ts).
 */
async function registerGraphqlHook(app: FastifyInstance, config: Config, services: Services): Promise<void> {
  // The door closes itself (WebSockets, Apollo) when the app closes.
  await registerGraphQL(app, { config, services, baseUrlOf: (r) => baseUrlOf(config, r) });
}

/** Base address of image URLs for a request: PUBLIC_BASE_URL, or what the client called. */
export function baseUrlOf(config: Config, request: Pick<FastifyRequest, 'protocol' | 'headers'>): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  return `${request.protocol}://${request.headers.host ?? 'localhost'}`;
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
};

/** Everything that can go wrong, as a catalog error. Only faults become (masked, logged) 500s. */
function toAppError(err: FastifyError, request: FastifyRequest): AppError {
  if (isAppError(err)) {
    // Upstream and infrastructure trouble is worth an operator's look; client errors are not.
    if (err.httpStatus >= 500) request.log.warn({ err: err.cause ?? err, code: err.code, requestId: request.id }, err.message);
    return err;
  }
  if (isDatabaseUnavailableError(err)) {
    request.log.warn({ err, requestId: request.id }, 'database unavailable');
    return new AppError('database_unavailable', { retryAfter: RETRY_AFTER_SECONDS, cause: err });
  }
  const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (mapped) return new AppError(mapped, { cause: err });
  // Body parsing errors without a code of their own (JSON.parse through Fastify).
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) return new AppError('invalid_json', { cause: err });
  if (err.statusCode === 413) return new AppError('payload_too_large', { cause: err });
  if (err.statusCode === 415) return new AppError('unsupported_media_type', { cause: err });
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return new AppError('invalid_request', { cause: err });
  request.log.error({ err, requestId: request.id }, 'unexpected error');
  return new AppError('internal_error', { cause: err });
}

function sendError(reply: FastifyReply, request: FastifyRequest, err: AppError): FastifyReply {
  const retryAfter = err.retryAfter ?? (err.httpStatus === 503 || err.httpStatus === 429 ? RETRY_AFTER_SECONDS : undefined);
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  if (err.httpStatus === 401) reply.header('www-authenticate', 'Bearer');
  return reply.code(err.httpStatus).type('application/json; charset=utf-8').send({ error: err.message, code: err.code, requestId: String(request.id) });
}
