/**
 * `/graphql` over HTTP: Apollo Server 5 on Fastify, behind the edge (which has already decided who is
 * calling: `auth: 'apiKeyOrToken'`, and added CORS headers: `cors: true`). Apollo answers every request
 * through its own request pipeline; the product's work is in its plugins (admission, logging, metrics).
 *
 * Status codes (GraphQL-over-HTTP):
 *  - 200 when the operation executed, even if a field failed: `errors` carries the domain error
 *    (402 INSUFFICIENT_CREDITS, 400 BAD_USER_INPUT, 404 NOT_FOUND, …) next to `data`;
 *  - the catalog's status when the request as a whole is refused before execution (401, 403, 429,
 *    503), in the media type the client accepts;
 *  - 400 for a document that does not parse or validate, bad variables, an exceeded depth / alias /
 *    cost / token limit, or a request without a CSRF-safe header; 405 for a mutation over GET;
 *    413 for a body over BODY_LIMIT_BYTES; 415 for a non-JSON POST.
 */
import {
  ApolloServer,
  type ApolloServerPlugin,
  type GraphQLRequestContextDidResolveOperation,
  type GraphQLRequestContextWillSendResponse,
} from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { Span } from '@opentelemetry/api';
import type { GraphQLError } from 'graphql';
import type { Config } from '../../config.js';
import { AppError } from '../../domain/errors.js';
import { preflightRoute } from '../../edge/cors.js';
import { rateLimitHeaders } from '../../edge/rate-limit-headers.js';
import { errorHeaders, logLevelOf, toAppError } from '../../edge/errors.js';
import type { TransportMetrics } from '../../edge/metrics.js';
import { createContext, type GraphQLContext, type GraphQLServices } from '../../graphql/context.js';
import { formatGraphQLError, isMaskedError, toRequestError } from '../../graphql/errors.js';
import type { BaseUrlOf } from '../routes/types.js';
import type { OperationAdmission } from './admission.js';
import { apolloHandler } from './apollo-handler.js';
import { compiledExecution, compiledExecutor, type CompiledExecution } from './compiled-executor.js';
import { endOperationSpan, inOperationSpan, nameOperationSpan, startOperationSpan } from '../../tracing/operations.js';
import { SubscriptionsOverWebSocketOnly, type Execution } from './execution.js';
import { trustDocuments } from './trusted-documents.js';

export async function registerHttpDoor(
  app: FastifyInstance,
  opts: {
    path: string;
    config: Config;
    services: GraphQLServices;
    admission: OperationAdmission;
    execution: Execution;
    baseUrlOf: BaseUrlOf;
    metrics?: Pick<TransportMetrics, 'graphqlOperation'>;
  },
): Promise<ApolloServer<GraphQLContext>> {
  const { path, config, services, execution, baseUrlOf } = opts;
  const compiled = compiledExecution(execution.schema);
  // With tracing on, each operation's span (a plugin below) is active while it executes.
  const spans = config.OTEL_EXPORTER_OTLP_ENDPOINT ? new WeakMap<object, Span>() : undefined;
  const execute: CompiledExecution = spans
    ? (document, operationName, context, variables) => {
        const span = spans.get(context as object);
        return span ? inOperationSpan(span, () => compiled(document, operationName, context, variables)) : compiled(document, operationName, context, variables);
      }
    : compiled;
  const validationRules = [...execution.armorRules, SubscriptionsOverWebSocketOnly];
  const apollo = new ApolloServer<GraphQLContext>({
    // Executes with graphql-jit, one compiled function per document (compiled-executor.ts).
    gateway: compiledExecutor(execution.schema, execute),
    logger: app.log,
    introspection: config.GRAPHQL_INTROSPECTION,
    csrfPrevention: true,
    // Automatic persisted queries as Apollo does them, in Apollo's bounded in-memory cache (per
    // instance: a client whose hash another instance has not seen sends the text again, as APQ expects).
    persistedQueries: { ttl: 24 * 3600 },
    allowBatchedHttpRequests: false,
    includeStacktraceInErrorResponses: false,
    // The gateway's own SIGTERM handler closes Fastify, which stops Apollo (the door's onClose). Apollo's
    // handler (on by default outside NODE_ENV=test) would start a second stop that never settles and
    // hold the shutdown until Fastify's close timeout.
    stopOnTerminationSignals: false,
    validationRules,
    parseOptions: { maxTokens: execution.maxTokens },
    formatError: execution.formatError,
    plugins: [
      ...execution.armorPlugins,
      // No fastifyApolloDrainPlugin: it closes Fastify from apollo.stop(), and here Fastify's close
      // is what stops Apollo; Fastify drains its own connections.
      logMaskedErrors(app.log),
      ...(services.documents ? [trustDocuments(services.documents)] : []),
      admitOperations(opts.admission),
      ...(opts.metrics ? [countOperations(opts.metrics)] : []),
      ...(spans ? [traceOperations(spans)] : []),
      // No landing page: Apollo's loads a web IDE from a CDN; the console serves an explorer instead.
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints (every operation is per caller and charged): without this default plugin Apollo
      // does not wrap every field resolver to collect them.
      ApolloServerPluginCacheControlDisabled(),
      // Not a federated subgraph: no traces to inline (Apollo would otherwise check on every request).
      ApolloServerPluginInlineTraceDisabled(),
    ],
  });
  await apollo.start();

  const contextOf = (request: FastifyRequest): GraphQLContext => {
    const principal = request.principal;
    if (!principal) throw toRequestError(new AppError('internal_error', { message: 'request reached GraphQL unauthenticated' }));
    return createContext({ services, principal, requestId: String(request.id), urls: { baseUrl: baseUrlOf(request) }, ip: request.ip });
  };
  const handler = apolloHandler(apollo, async (request) => contextOf(request));

  await app.register(async function graphqlOverHttp(scope) {
    // Errors raised before Apollo sees the request (authentication, body too large, bad JSON, wrong
    // content type) keep the edge's catalog status and headers and take the GraphQL response shape.
    scope.setErrorHandler((err, request, reply) => {
      const refusal = toAppError(err);
      const level = logLevelOf(refusal);
      if (level) request.log[level]({ err, requestId: request.id }, 'graphql: request refused');
      const formatted = formatGraphQLError({ message: refusal.message }, refusal);
      return reply.code(refusal.httpStatus).headers(errorHeaders(refusal)).type(refusalMediaType(request.headers.accept)).send({ errors: [formatted] });
    });
    scope.route({ method: ['GET', 'POST'], url: path, bodyLimit: config.BODY_LIMIT_BYTES, config: { auth: 'apiKeyOrToken', cors: true }, handler });
    scope.route(preflightRoute(path, ['GET', 'POST']));
  });
  return apollo;
}

const GRAPHQL_RESPONSE = 'application/graphql-response+json';

/**
 * GraphQL-over-HTTP: `application/graphql-response+json` when the client accepts it at least as much
 * as `application/json` (Apollo Client 4 and urql ask for it first), else `application/json`.
 */
export function refusalMediaType(accept: string | undefined): string {
  let json = -1;
  let graphql = -1;
  for (const part of (accept ?? '').toLowerCase().split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!Number.isFinite(q)) continue;
    if (type === GRAPHQL_RESPONSE) graphql = Math.max(graphql, q);
    else if (type === 'application/json' || type === 'application/*' || type === '*/*') json = Math.max(json, type === 'application/json' ? q : q - 0.001);
  }
  return graphql > 0 && graphql >= json ? `${GRAPHQL_RESPONSE}; charset=utf-8` : 'application/json; charset=utf-8';
}

/**
 * Apollo's pipeline hands each operation it resolved to the admission both transports share
 * (admission.ts): refused, Apollo answers the error for the whole operation with its catalog status (a
 * 403 for a missing key permission, a 429 when the charging fields pass the rate limit), nothing
 * executed, nothing charged. The rate limit's headers go on the answer whenever it counted.
 */
function admitOperations(admission: OperationAdmission): ApolloServerPlugin<GraphQLContext> {
  const listener = {
    async didResolveOperation({ contextValue, document, operation, response }: GraphQLRequestContextDidResolveOperation<GraphQLContext>): Promise<void> {
      // No such operation in the document: Apollo answers that itself (400), as it always has.
      if (!operation) return;
      const admitted = await admission.admit({ document, operation }, contextValue);
      const rateLimit = admitted.ok || admitted.kind === 'refused' ? admitted.rateLimit : null;
      if (rateLimit) for (const [name, value] of Object.entries(rateLimitHeaders(rateLimit))) response.http.headers.set(name, value);
      if (admitted.ok) return;
      // Apollo parsed, validated and resolved the operation before this hook: only a refusal remains.
      if (admitted.kind === 'refused') throw toRequestError(admitted.error);
      throw new Error(`admission found an operation Apollo validated invalid: ${admitted.errors[0]?.message}`);
    },
  };
  return { requestDidStart: async () => listener };
}

/** graphql_operations_total: each operation Apollo answered, by type (unknown: it did not parse or validate). */
function countOperations(metrics: Pick<TransportMetrics, 'graphqlOperation'>): ApolloServerPlugin<GraphQLContext> {
  const listener = {
    async willSendResponse({ operation, errors, response }: GraphQLRequestContextWillSendResponse<GraphQLContext>) {
      const fieldErrors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
      metrics.graphqlOperation(operation?.operation ?? 'unknown', errors?.length || fieldErrors?.length ? 'error' : 'ok');
    },
  };
  return { requestDidStart: async () => listener };
}

/**
 * One span per operation (src/tracing/operations.ts), from the moment Apollo starts the request to its
 * answer: named once the operation is resolved, failed when the answer carries errors. The executor
 * runs inside it (`spans`, keyed by the operation's context object, which Apollo hands to both).
 */
function traceOperations(spans: WeakMap<object, Span>): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart({ contextValue }) {
      const span = startOperationSpan();
      spans.set(contextValue, span);
      return {
        async didResolveOperation({ operation }) {
          nameOperationSpan(span, operation);
        },
        async willSendResponse({ errors, response }) {
          const fieldErrors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
          endOperationSpan(span, errors?.length ? errors : fieldErrors);
        },
      };
    },
  };
}

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
