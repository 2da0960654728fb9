import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { fastifyApolloHandler } from '@as-integrations/fastify';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Config } from '../config.js';
import { AppError, ERROR_CATALOG } from '../domain/errors.js';
import type { KeyPrincipal } from '../domain/principal.js';
import { createContext, type GraphQLContext, type GraphQLServices } from '../graphql/context.js';
import { refuseConnection } from '../edge/client-errors.js';
import { databaseUnavailable } from '../edge/database.js';
import { errorHeaders, logLevelOf, toAppError } from '../edge/errors.js';
import { hostPolicy, hostRefusal, type HostPolicy } from '../edge/host.js';
import { appErrorOf, errorFormatter, formatGraphQLError, isMaskedError, toRequestError, type ErrorFormatter } from '../graphql/errors.js';
import { buildGraphQLSchema } from '../graphql/schema.js';

/**
 * `/graphql` over HTTP (Apollo Server 5 on Fastify) and over WebSocket (graphql-ws,
 * `graphql-transport-ws`) on the same server, path and port. Both transports authenticate with the
 * same KeyAuthenticator, build the same per-operation context (fresh DataLoaders) and format errors
 * with the same function.
 *
 * HTTP status codes (GraphQL-over-HTTP, application/json):
 *  - 200 when the operation executed, even if a field failed: `errors` carries the domain error
 *    (402 INSUFFICIENT_CREDITS, 400 BAD_USER_INPUT, 404 NOT_FOUND, …) next to `data`;
 *  - the catalog's status when the request as a whole is refused before execution: 401
 *    UNAUTHENTICATED (Authorization header), 429, 503;
 *  - 400 for a document that does not parse or validate, bad variables, an exceeded depth / alias /
 *    cost / token limit, or a request without a CSRF-safe header; 405 for a mutation over GET;
 *    413 for a body over BODY_LIMIT_BYTES; 415 for a non-JSON POST.
 */

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLDoor {
  readonly schema: GraphQLSchema;
  /**
   * Closes WebSocket connections (1001) and stops Apollo; runs by itself when the app closes. The
   * HTTP server itself belongs to the app.
   */
  close(): Promise<void>;
}

export interface GraphQLDoorOptions {
  config: Config;
  /** The services as this deployment exposes them (src/edge/exposed.ts). */
  services: GraphQLServices;
  /** Base address of image URLs for a request (the app's rule, shared with REST). */
  baseUrlOf?: (req: { headers: IncomingMessage['headers']; protocol: 'http' | 'https' }) => string;
  /** The edge's Host rule (ALLOWED_HOSTS), for WebSocket upgrades; default: any host. */
  hostAllowed?: HostPolicy;
  /** True while the database is known down: WebSocket operations are refused at once (HTTP: the edge). */
  databaseDown?: () => boolean;
}

interface ConnectionState {
  principal?: KeyPrincipal;
  /** The connection's `Authorization` value, checked again for every operation. */
  authorization?: string;
  connectionId: string;
  revoke: AbortController;
  active: number;
  /** Ids of the connection's open subscriptions (each counted once against the caps). */
  subscriptions: Set<string>;
}

type WsExtra = Extra & { state?: ConnectionState };

/** Registers `/graphql` (HTTP and WebSocket) on `app`. Call before `app.listen()`/`app.ready()`. */
export async function registerGraphQL(app: FastifyInstance, opts: GraphQLDoorOptions): Promise<GraphQLDoor> {
  const { config, services } = opts;
  const baseUrlOf = opts.baseUrlOf ?? defaultBaseUrl;
  const schema = await buildGraphQLSchema();
  const log = app.log;

  const armor = new ApolloArmor({
    maxDepth: { n: config.GRAPHQL_MAX_DEPTH },
    maxAliases: { n: config.GRAPHQL_MAX_ALIASES },
    costLimit: { maxCost: config.GRAPHQL_MAX_COST },
    // Tokens are limited by graphql-js' own parser option (parseOptions below): armor's token plugin
    // turns every syntax error into a 500.
    maxTokens: { enabled: false },
    // Suggestions are hidden by formatError below, for WebSocket results too (armor's plugin only
    // covers Apollo's HTTP pipeline).
    blockFieldSuggestion: { enabled: false },
  });
  const formatError = errorFormatter({ hideSuggestions: !config.GRAPHQL_INTROSPECTION });
  const protection = armor.protect();

  const apollo = new ApolloServer<GraphQLContext>({
    schema,
    logger: log,
    introspection: config.GRAPHQL_INTROSPECTION,
    csrfPrevention: true,
    persistedQueries: false,
    allowBatchedHttpRequests: false,
    includeStacktraceInErrorResponses: false,
    // The gateway's own SIGTERM handler closes Fastify, which stops Apollo (preClose below). Apollo's
    // handler (on by default outside NODE_ENV=test) would start a second stop that never settles and
    // hold the shutdown until Fastify's close timeout.
    stopOnTerminationSignals: false,
    validationRules: [...protection.validationRules, SubscriptionsOverWebSocketOnly],
    parseOptions: { maxTokens: config.GRAPHQL_MAX_TOKENS },
    formatError,
    // Cast: armor resolves @apollo/server's CommonJS typings, structurally the same plugins.
    plugins: [
      ...(protection.plugins as unknown as ApolloServerPlugin<GraphQLContext>[]),
      // No fastifyApolloDrainPlugin: it closes Fastify from apollo.stop(), and here Fastify's close
      // is what stops Apollo (preClose below); Fastify drains its own connections.
      logMaskedErrors(log),
      // No landing page: it loads a web IDE from a CDN, and the gateway is an API.
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints (every operation is per caller and charged): without this default plugin Apollo
      // does not wrap every field resolver to collect them.
      ApolloServerPluginCacheControlDisabled(),
      // Not a federated subgraph: no traces to inline (Apollo would otherwise check on every request).
      ApolloServerPluginInlineTraceDisabled(),
    ],
  });
  await apollo.start();

  // The caller of each request, authenticated by the edge in onRequest (before the body is read, so a
  // 401 comes before 400/413/415 as in REST) and handed to Apollo's context.
  const handler = fastifyApolloHandler(apollo, {
    context: async (request) => {
      const principal = request.principal;
      if (!principal) throw toRequestError(new AppError('internal_error', { message: 'request reached GraphQL unauthenticated' }));
      return createContext({
        services,
        principal,
        requestId: String(request.id),
        urls: { baseUrl: baseUrlOf({ headers: request.headers, protocol: request.protocol }) },
      });
    },
  });

  await app.register(async (scope) => {
    // Errors raised before Apollo sees the request (authentication, body too large, bad JSON, wrong
    // content type) keep the edge's catalog status and headers and take the GraphQL response shape.
    scope.setErrorHandler((err, request, reply) => {
      const refusal = toAppError(err);
      const level = logLevelOf(refusal);
      if (level) request.log[level]({ err, requestId: request.id }, 'graphql: request refused');
      const formatted = formatGraphQLError({ message: refusal.message }, refusal);
      return reply.code(refusal.httpStatus).headers(errorHeaders(refusal)).type('application/json; charset=utf-8').send({ errors: [formatted] });
    });
    // No OPTIONS: there is no CORS here (server-side clients), so no preflight to answer.
    scope.route({ method: ['GET', 'POST'], url: GRAPHQL_PATH, bodyLimit: config.BODY_LIMIT_BYTES, config: { auth: 'apiKey' }, handler });
  });

  const ws = await attachWebSocket(app, schema, protection.validationRules, { ...opts, services }, baseUrlOf, formatError, log);

  let wsClosing: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  const closeWebSockets = () => (wsClosing ??= ws.close());
  const close = () =>
    (closing ??= (async () => {
      await closeWebSockets();
      await apollo.stop();
    })());
  // WebSockets in preClose: open ones would otherwise keep Fastify's close waiting for them. Apollo in
  // onClose, once the server has answered the requests in flight: a stopped Apollo fails them.
  app.addHook('preClose', closeWebSockets);
  app.addHook('onClose', close);
  return { schema, close };
}
/**
 * A subscription sent over HTTP (POST or GET) is the client's mistake, not a fault: graphql-js would
 * run the subscription field as a query and fail inside it (a masked 500). A validation rule of the
 * HTTP door only refuses it with a 400 that says where subscriptions are served.
 */
const SubscriptionsOverWebSocketOnly: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (node.operation === 'subscription') {
      context.reportError(new GraphQLError(ERROR_CATALOG.subscription_over_http.message, { nodes: node, originalError: new AppError('subscription_over_http') }));
    }
  },
});

/** Logs every error that reaches the client masked, with the request id to find it by. */
function logMaskedErrors(log: FastifyBaseLogger): ApolloServerPlugin<GraphQLContext> {
  // One listener for every request: it keeps no state of its own.
  const listener = {
    async didEncounterErrors({ errors, contextValue }: { errors: readonly GraphQLError[]; contextValue?: GraphQLContext }) {
      for (const err of errors) {
        if (isMaskedError(err)) log.error({ err: err.originalError ?? err, requestId: contextValue?.requestId }, 'graphql: masked internal error');
      }
    },
  };
  return { requestDidStart: async () => listener };
}

async function attachWebSocket(
  app: FastifyInstance,
  schema: GraphQLSchema,
  armorRules: readonly ValidationRule[],
  opts: GraphQLDoorOptions,
  baseUrlOf: NonNullable<GraphQLDoorOptions['baseUrlOf']>,
  formatError: ErrorFormatter,
  log: FastifyBaseLogger,
): Promise<{ close(): Promise<void> }> {
  const { config, services } = opts;
  const hostAllowed = opts.hostAllowed ?? hostPolicy(undefined);
  const databaseDown = opts.databaseDown ?? (() => false);
  const wss = new WebSocketServer({ noServer: true, maxPayload: config.BODY_LIMIT_BYTES });
  const rules: readonly ValidationRule[] = [
    ...specifiedRules,
    ...armorRules,
    ...(config.GRAPHQL_INTROSPECTION ? [] : [NoSchemaIntrospectionCustomRule]),
  ];

  const subscriptionCaps = subscriptionLimits(config);
  // One revocation listener per process: key id → the connections it opened.
  const byKey = new Map<string, Set<ConnectionState & { close(): void }>>();
  const unsubscribeRevoked = services.keys.onRevoked((keyId) => {
    for (const conn of byKey.get(keyId) ?? []) conn.close();
  });

  const server = useServer<Record<string, unknown>, { state: ConnectionState }>(
    {
      schema,
      async onConnect(ctx) {
        const extra = ctx.extra as WsExtra;
        const state: ConnectionState = { connectionId: randomUUID(), revoke: new AbortController(), active: 0, subscriptions: new Set() };
        extra.state = state;
        const authorization = ctx.connectionParams?.Authorization ?? ctx.connectionParams?.authorization;
        state.authorization = typeof authorization === 'string' ? authorization : undefined;
        try {
          if (databaseDown()) throw databaseUnavailable();
          state.principal = await services.keys.authenticate(state.authorization);
        } catch (err) {
          const app = appErrorOf(err);
          if (app?.httpStatus === 401) {
            // 4403 with the contract's text as the reason; graphql-ws' own 4403 close then is a no-op.
            extra.socket.close(CloseCode.Forbidden, app.message);
          } else if (app?.spec.retryable && app.spec.graphqlCode !== 'INTERNAL_SERVER_ERROR') {
            // 1013 Try Again Later: the database (or a limit) refused us for now, the key may be fine.
            extra.socket.close(1013, app.message);
          } else {
            log.error({ err, connectionId: state.connectionId }, 'graphql-ws: authentication failed unexpectedly');
            extra.socket.close(1011, 'Internal server error');
          }
          return false;
        }
        const keyId = state.principal.keyId;
        const conn = Object.assign(state, {
          close: () => {
            state.revoke.abort(new AppError('invalid_api_key'));
            // Subscriptions end with an UNAUTHENTICATED error first; then the connection goes.
            setTimeout(() => extra.socket.close(CloseCode.Forbidden, 'Invalid API key'), state.active ? 200 : 0).unref();
          },
        });
        let set = byKey.get(keyId);
        if (!set) byKey.set(keyId, (set = new Set()));
        set.add(conn);
        extra.socket.once('close', () => {
          set.delete(conn);
          if (set.size === 0 && byKey.get(keyId) === set) byKey.delete(keyId);
          // graphql-ws returns every open subscription on close; their places under the caps go now.
          for (const id of [...state.subscriptions]) subscriptionCaps.release(state, id);
        });
        return true;
      },
      async onSubscribe(ctx, id, payload): Promise<ExecutionArgs | readonly GraphQLError[]> {
        const state = (ctx.extra as WsExtra).state!;
        const principal = state.principal!;
        let document: DocumentNode;
        try {
          document = parse(payload.query, { maxTokens: config.GRAPHQL_MAX_TOKENS });
        } catch (err) {
          return [clientError(err instanceof GraphQLError ? err.message : 'Syntax error')];
        }
        const errors = validate(schema, document, rules);
        if (errors.length) return errors.map((e) => clientError(e.message));
        const operation = getOperationAST(document, payload.operationName);
        if (!operation) return [clientError('Unable to identify the operation to run')];
        // Every operation is a request of its own, as over HTTP: the key is checked again (a deletion
        // not yet announced is caught here) and the per-key rate limit counts it.
        if (state.revoke.signal.aborted) return [requestError(new AppError('invalid_api_key'))];
        if (databaseDown()) return [requestError(databaseUnavailable())];
        try {
          await services.keys.authenticate(state.authorization);
        } catch (err) {
          const app = appErrorOf(err);
          if (!app) throw err;
          return [requestError(app)];
        }
        // Checked and taken with no await in between: concurrent subscribes cannot both pass.
        if (operation.operation === 'subscription') {
          const refused = subscriptionCaps.take(state, id);
          if (refused) return [requestError(refused)];
        }
        state.active++;
        const request = (ctx.extra as WsExtra).request;
        return {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: createContext({
            services,
            principal,
            requestId: `${state.connectionId}/${id}`,
            urls: { baseUrl: baseUrlOf({ headers: request.headers, protocol: isEncrypted(request) ? 'https' : 'http' }) },
            signal: state.revoke.signal,
          }),
        };
      },
      onNext(_ctx, _id, _payload, args, result) {
        return formatResult(result as ExecutionResult, (args.contextValue as GraphQLContext).requestId, formatError, log);
      },
      onError(ctx, id, _payload, errors) {
        const requestId = `${(ctx.extra as WsExtra).state?.connectionId}/${id}`;
        return errors.map((e) => formatAndLog(e, requestId, formatError, log));
      },
      onComplete(ctx, id) {
        const state = (ctx.extra as WsExtra).state;
        if (!state) return;
        state.active = Math.max(0, state.active - 1);
        subscriptionCaps.release(state, id);
      },
    },
    wss,
  );

  // Refused upgrades answer in the contract's shape, as every HTTP error does.
  wss.on('wsClientError', (err: Error, socket: Duplex) => refuseConnection(socket, new AppError('malformed_request', { message: `Invalid WebSocket handshake: ${err.message}` }), log));
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== GRAPHQL_PATH) {
      refuseConnection(socket, new AppError('route_not_found'), log);
      return;
    }
    // Subscriptions build image URLs from the Host too.
    const refusal = hostRefusal(req, hostAllowed);
    if (refusal) {
      refuseConnection(socket, refusal, log);
      return;
    }
    wss.handleUpgrade(req, socket, head, (client) => wss.emit('connection', client, req));
  };
  app.server.on('upgrade', onUpgrade);

  return {
    async close() {
      unsubscribeRevoked();
      app.server.off('upgrade', onUpgrade);
      await server.dispose();
    },
  };
}

/**
 * Open subscriptions per WebSocket and per API key on this instance (each holds a job watch and a
 * slot in the fan-out). Over a cap, the subscribe is refused (RATE_LIMITED); the socket stays open.
 */
function subscriptionLimits(config: Pick<Config, 'GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET' | 'GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY'>) {
  const perKey = new Map<string, number>();
  return {
    take(state: ConnectionState, id: string): AppError | undefined {
      const keyId = state.principal!.keyId;
      const forKey = perKey.get(keyId) ?? 0;
      if (state.subscriptions.size >= config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET) {
        return new AppError('too_many_subscriptions', { message: `Too many open subscriptions on this connection (at most ${config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET})` });
      }
      if (forKey >= config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY) {
        return new AppError('too_many_subscriptions', { message: `Too many open subscriptions for this API key (at most ${config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY})` });
      }
      state.subscriptions.add(id);
      perKey.set(keyId, forKey + 1);
      return undefined;
    },
    release(state: ConnectionState, id: string): void {
      if (!state.subscriptions.delete(id)) return;
      const keyId = state.principal!.keyId;
      const left = (perKey.get(keyId) ?? 1) - 1;
      if (left > 0) perKey.set(keyId, left);
      else perKey.delete(keyId);
    },
  };
}

function requestError(err: AppError): GraphQLError {
  return new GraphQLError(err.message, { originalError: err });
}

function clientError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

function formatAndLog(error: GraphQLError, requestId: string, formatError: ErrorFormatter, log: FastifyBaseLogger) {
  if (isMaskedError(error)) log.error({ err: error.originalError ?? error, requestId }, 'graphql-ws: masked internal error');
  return formatError(error.toJSON(), error);
}

function formatResult(result: ExecutionResult, requestId: string, formatError: ErrorFormatter, log: FastifyBaseLogger) {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => formatAndLog(e, requestId, formatError, log)) } as unknown as ExecutionResult;
}

function isEncrypted(req: IncomingMessage): boolean {
  return Boolean((req.socket as { encrypted?: boolean }).encrypted);
}

function defaultBaseUrl(req: { headers: IncomingMessage['headers']; protocol: 'http' | 'https' }): string {
  return `${req.protocol}://${req.headers.host ?? 'localhost'}`;
}
