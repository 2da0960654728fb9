/**
 * buildApp(): the one HTTP server (Fastify 5) for the doors that speak HTTP: REST, GraphQL (HTTP and
 * WebSocket) and the console. It never listens: main.ts and the test harness do.
 *
 * What every door shares is in src/edge: who is calling (API key or console session, declared on the
 * request with decorateRequest), error translation and retry hints, which services this deployment
 * exposes. Each door receives only the interfaces it calls.
 *
 * How to plug in (other modules):
 *  - REST routes: a Fastify plugin in src/http/routes/<name>.ts (type RouteModule); add it below with
 *    the SERVICES entry that enables it. Routes that need an API key set `config: { auth: 'apiKey',
 *    operation }`, naming what they run in the operation catalog (src/domain/operations/catalog.ts:
 *    its price, the key permission it needs); the OpenAPI document gives them the bearer scheme.
 *  - Every REST route declares zod schemas, which validate the request, type the handler and make
 *    its entry in `/openapi.json` (test/http/openapi.test.ts fails for a route without them):
 *      schema: {
 *        summary: 'Add a webhook endpoint',
 *        body: webhookRequestSchema,                         // request rules live in src/domain
 *        response: { 201: webhookCreated, ...errorResponses([...EDGE, ...API_KEY, ...JSON_BODY, 'invalid_request']) },
 *      }
 *    (params / querystring / headers alike; see src/http/routes/images.ts, cancel included).
 *    Request rules are the domain's (src/domain/<area>/validation.ts, messages relative to the field:
 *    'must be a string'; src/domain/validation.ts names the field), so GraphQL gets the same 400s.
 *    Success bodies go in src/http/schemas/bodies.ts; errorResponses (src/http/schemas/errors.ts)
 *    turns catalog codes into one response per status (add your route's codes, and RATE_LIMIT-style
 *    sets there). A charging route adds `headers: idempotencyHeaders`. Responses are not filtered by
 *    their schema: test/http/openapi.test.ts checks real answers (add yours with `check`).
 *  - Not REST (pages, GraphQL): under /console, /graphql or /docs, which the document leaves out.
 *  - Errors: throw AppError (src/domain/errors.ts); the error handler shapes `{error, code, requestId}`.
 */
import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { registerConsole } from '../console/plugin.js';
import { AppError } from '../domain/errors.js';
import { registerEdgeAuth } from '../edge/auth.js';
import { createClientErrorEdge } from '../edge/client-errors.js';
import { registerCors } from '../edge/cors.js';
import { createCredentials } from '../edge/credentials.js';
import { registerDatabaseGate } from '../edge/database.js';
import { registerDraining } from '../edge/draining.js';
import { hostPolicy, registerHostCheck } from '../edge/host.js';
import { registerHttps } from '../edge/https.js';
import { registerJsonCharsetCheck } from '../edge/json-charset.js';
import { registerHttpMetrics, type TransportMetrics } from '../edge/metrics.js';
import { trustProxyOption } from '../edge/proxy.js';
import { requestLogFields } from '../edge/request-log.js';
import { errorBody, errorHeaders, translate } from '../edge/errors.js';
import { exposedOnly, serves } from '../edge/exposed.js';
import type { Services } from '../services.js';
import { registerGraphQL } from './graphql/index.js';
import { useZodSchemas } from './openapi/compilers.js';
import { registerOpenApi } from './openapi/plugin.js';
import clientTokenRoutes from './routes/client-tokens.js';
import definitionRoutes from './routes/definitions.js';
import healthRoutes from './routes/health.js';
import imageRoutes from './routes/images.js';
import rootRoutes from './routes/root.js';
import webhookRoutes from './routes/webhooks.js';
import stripeWebhookRoutes from './routes/stripe-webhook.js';

export interface BuildAppOptions {
  config: Config;
  services: Services;
  /** A pino logger, or `false` for none; default: Fastify's own (pino) at config.LOG_LEVEL. */
  logger?: FastifyBaseLogger | false;
  /** Where Fastify's own logger writes JSON lines (default stdout). */
  logStream?: { write(line: string): void };
  /** Told of every route as it is registered (the security suite checks that none escapes it). */
  onRoute?: (route: { method: string | string[]; url: string; auth: string | undefined; operation: string | undefined; permission: string | undefined }) => void;
  /** Told of every response, GraphQL operation and WebSocket (METRICS_PORT); default: nothing counted. */
  metrics?: TransportMetrics;
}

export async function buildApp(opts: BuildAppOptions): Promise<FastifyInstance> {
  const { config, services } = opts;
  const clientErrors = createClientErrorEdge();
  const app = Fastify({
    ...(opts.logger
      ? { loggerInstance: opts.logger }
      : {
          logger:
            opts.logger === false || config.LOG_LEVEL === 'silent'
              ? false
              : // Request lines keep the path, not the secrets some query strings carry (signed image URLs).
                { level: config.LOG_LEVEL, serializers: { req: requestLogFields }, ...(opts.logStream ? { stream: opts.logStream } : {}) },
        }),
    bodyLimit: config.BODY_LIMIT_BYTES,
    // A client's X-Request-Id is kept when it is sane, so calls can be traced across systems.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    // Only behind proxies the operator runs: then the client's address and protocol are the
    // forwarded ones (the first untrusted hop), for audit entries, per-IP limits and Secure cookies.
    trustProxy: trustProxyOption(config.TRUST_PROXY),
    // maxParamLength: a parameter as long as any URL Node accepts (16 KiB of headers) reaches its
    // route, so an overlong job id is the route's 404 after authentication, not the router's 414.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024 },
    // Errors the router raises before a route is found, in the contract's shape.
    frameworkErrors: (err, request, reply) => sendError(reply, request, translate(err, request)),
    // Requests that arrive while the app closes get the contract's 503 (src/edge/draining.ts), not
    // Fastify's own body; idle keep-alive sockets are closed when the server stops accepting.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // Requests must arrive in time (headers, then the whole request); a client that stalls gets a 408
    // from the clientErrorHandler. Node checks every connection at this interval, so it bounds how
    // late a timeout fires. Time spent answering is not counted.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    http: {
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(config.HEADERS_TIMEOUT_MS / 4))),
      // The edge answers a missing Host in the contract's shape (Node's own 400 has an empty body).
      requireHostHeader: false,
    },
    clientErrorHandler: clientErrors.handler,
  }) as unknown as FastifyInstance;

  if (opts.onRoute) {
    const report = opts.onRoute;
    app.addHook('onRoute', (route) => {
      const config = route.config as { auth?: string; operation?: string; permission?: string } | undefined;
      report({ method: route.method, url: route.url, auth: config?.auth, operation: config?.operation, permission: config?.permission });
    });
  }
  if (opts.metrics) registerHttpMetrics(app, opts.metrics);
  registerHttps(app, config.PUBLIC_BASE_URL);
  registerDraining(app);
  // Before every refusal, so that browser apps can read theirs.
  registerCors(app);
  const hostAllowed = hostPolicy(config.ALLOWED_HOSTS);
  registerHostCheck(app, hostAllowed);
  registerDatabaseGate(app, services.health);
  clientErrors.register(app);
  // JSON only: without this Fastify would accept text/plain bodies, and the contract wants 415.
  app.removeContentTypeParser(['text/plain']);
  registerJsonCharsetCheck(app);
  // Cookie parsing on demand (no global hook): only console routes read the session cookie.
  await app.register(fastifyCookie, { hook: false });
  const credentials = createCredentials({ keys: services.authenticator, tokens: services.clientTokens });
  registerEdgeAuth(app, {
    credentials,
    sessions: services.console.callers,
    consoleOrigins: config.PUBLIC_BASE_URL ? [new URL(config.PUBLIC_BASE_URL).origin] : [],
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, request, new AppError('route_not_found')));
  app.setErrorHandler((err, request, reply) => sendError(reply, request, translate(err, request)));

  const sellable = exposedOnly({ ...services.budgeted, jobWatch: services.jobWatch }, config);
  const baseUrlOf = (r: Pick<FastifyRequest, 'protocol' | 'headers'>) => baseUrl(config, r);
  // Before any route: the document collects routes as they are added.
  useZodSchemas(app);
  await registerOpenApi(app, { publicBaseUrl: config.PUBLIC_BASE_URL });
  await app.register(healthRoutes, { health: services.health });
  await app.register(rootRoutes, {});
  await app.register(clientTokenRoutes, { tokens: services.clientTokens });
  await app.register(webhookRoutes, { webhooks: services.webhooks, baseUrlOf });
  const { billing } = services;
  await app.register(stripeWebhookRoutes, { stripe: billing.verify ? { verify: billing.verify, fulfilment: billing.fulfilment } : null });
  if (serves(config, 'definitions')) {
    await app.register(definitionRoutes, { definitions: sellable.definitions, idempotency: services.idempotency, maxKeywordLength: config.MAX_KEYWORD_LENGTH });
  }
  if (serves(config, 'images')) {
    const limits = { maxPrompts: config.MAX_PROMPTS, maxPromptLength: config.MAX_PROMPT_LENGTH };
    await app.register(imageRoutes, { jobs: sellable.jobs, imageFiles: services.imageFiles, idempotency: services.idempotency, baseUrlOf, limits });
  }
  // The door closes itself (WebSockets, Apollo) when the app closes.
  await registerGraphQL(app, {
    config,
    services: {
      keys: services.authenticator,
      apiKeys: services.keys,
      tokens: services.clientTokens,
      documents: services.trustedDocuments,
      balances: services.balances,
      idempotency: services.idempotency,
      ...sellable,
    },
    credentials,
    baseUrlOf,
    hostAllowed,
    databaseDown: () => services.health.knownDown(),
    metrics: opts.metrics,
  });
  await registerConsole(app, {
    config,
    services: {
      ...sellable,
      keys: services.keys,
      credits: services.credits,
      audit: services.audit,
      usage: services.usage,
      sessions: services.console.sessions,
      signIn: services.console.signIn,
      team: services.console.team,
      invitations: services.console.invitations,
      signUp: services.console.signUp,
      passwords: services.console.passwords,
      twoFactor: services.console.twoFactor,
      clientTokens: services.clientTokens,
      webhooks: services.webhooks,
      billing: services.billing.service,
    },
    baseUrlOf,
  });
  return app;
}

/** Base address of image URLs for a request: PUBLIC_BASE_URL, or what the client called. */
export function baseUrl(config: Pick<Config, 'PUBLIC_BASE_URL'>, request: Pick<FastifyRequest, 'protocol' | 'headers'>): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  return `${request.protocol}://${request.headers.host ?? 'localhost'}`;
}

function sendError(reply: FastifyReply, request: FastifyRequest, err: AppError): FastifyReply {
  return reply.code(err.httpStatus).headers(errorHeaders(err)).type('application/json; charset=utf-8').send(errorBody(err, String(request.id)));
}
