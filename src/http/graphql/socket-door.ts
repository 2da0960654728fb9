/**
 * `/graphql` over WebSocket (graphql-ws, `graphql-transport-ws`) on the HTTP server's port: wiring
 * only. Admission, who is calling, per-operation re-checks and endings are the edge's
 * (src/edge/sockets.ts); execution uses the HTTP door's schema, rules and error formatter.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Span } from '@opentelemetry/api';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { execute, getOperationAST, GraphQLError, subscribe, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Config } from '../../config.js';
import { AppError } from '../../domain/errors.js';
import type { KeyPermission } from '../../domain/keys/permissions.js';
import { refuseConnection } from '../../edge/client-errors.js';
import type { Credentials } from '../../edge/credentials.js';
import type { TransportMetrics } from '../../edge/metrics.js';
import { SocketCallers, upgradeRefusal, type GuardedOperation, type SocketCaller } from '../../edge/sockets.js';
import type { HostPolicy } from '../../edge/host.js';
import { createContext, type GraphQLContext, type GraphQLServices } from '../../graphql/context.js';
import { isMaskedError, type ErrorFormatter } from '../../graphql/errors.js';
import type { BaseUrlOf } from '../routes/types.js';
import { refusalError, type OperationAdmission } from './admission.js';
import type { Execution } from './execution.js';
import { subscriptionCaps } from './subscription-caps.js';
import { trustedOnly } from './trusted-documents.js';
import type { Principal } from '../../domain/principal.js';
import { endOperationSpan, inOperationSpan, nameOperationSpan, startOperationSpan } from '../../tracing/operations.js';

interface Connection {
  caller?: SocketCaller;
  connectionId: string;
  /** Ids of the connection's open subscriptions (each counted once against the caps). */
  subscriptions: Set<string>;
  /** Each open subscription's own signal: it ends alone when its key loses a permission it needs. */
  guarded: Map<string, GuardedOperation>;
  keyId: string;
}

type WsExtra = Extra & { conn?: Connection };

export interface SocketDoorOptions {
  path: string;
  config: Config;
  services: GraphQLServices;
  credentials: Credentials;
  admission: OperationAdmission;
  execution: Execution;
  baseUrlOf: BaseUrlOf;
  hostAllowed: HostPolicy;
  databaseDown: () => boolean;
  metrics?: Pick<TransportMetrics, 'graphqlOperation' | 'websocketOpened' | 'websocketClosed'>;
}

export function attachSocketDoor(app: FastifyInstance, opts: SocketDoorOptions): { close(): Promise<void> } {
  const { config, services, execution, baseUrlOf } = opts;
  const log = app.log;
  const wss = new WebSocketServer({ noServer: true, maxPayload: config.BODY_LIMIT_BYTES });
  const callers = new SocketCallers({ credentials: opts.credentials, databaseDown: opts.databaseDown, log, maxSubscriptions: config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET });
  const caps = subscriptionCaps(config);
  const metrics = opts.metrics;
  /**
   * The text a subscribe runs: its `query`, or, sent by hash alone (Apollo's persisted query extension),
   * the account's registered document of that hash. A `trustedDocumentsOnly` token runs only those.
   */
  const documentOf = async (principal: Principal, payload: { query: string; extensions?: Record<string, unknown> | null }): Promise<string | GraphQLError> => {
    const hash = (payload.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash;
    const sha256Hash = typeof hash === 'string' ? hash : null;
    if (payload.query && !trustedOnly(principal)) return payload.query;
    if (!payload.query && !sha256Hash) return payload.query;
    const body = services.documents ? await services.documents.trusted(principal.accountId, { query: payload.query || null, sha256Hash }) : null;
    if (body !== null) return payload.query || body;
    if (trustedOnly(principal)) return refusalError(new AppError('document_not_trusted'));
    return new GraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } });
  };
  // With tracing on, one span per operation (src/tracing/operations.ts), by request id (`<connection>/<id>`).
  const spans = config.OTEL_EXPORTER_OTLP_ENDPOINT ? new Map<string, Span>() : undefined;
  const endSpan = (requestId: string, errors?: readonly { message: string }[]) => {
    const span = spans?.get(requestId);
    if (!span) return;
    spans!.delete(requestId);
    endOperationSpan(span, errors);
  };
  const inSpanOf = <T>(args: ExecutionArgs, work: () => T): T => {
    const span = spans?.get((args.contextValue as GraphQLContext).requestId);
    return span ? inOperationSpan(span, work) : work();
  };

  const server = useServer<Record<string, unknown>, { conn: Connection }>(
    {
      schema: execution.schema,
      ...(spans ? { execute: (args: ExecutionArgs) => inSpanOf(args, () => execute(args)), subscribe: (args: ExecutionArgs) => inSpanOf(args, () => subscribe(args)) } : {}),
      async onConnect(ctx) {
        const extra = ctx.extra as WsExtra;
        const caller = await callers.connect(extra.socket, ctx.connectionParams, extra.request);
        if (!caller) return false;
        const conn: Connection = { caller, connectionId: randomUUID(), subscriptions: new Set(), guarded: new Map(), keyId: capsKeyOf(caller.principal) };
        extra.conn = conn;
        metrics?.websocketOpened();
        // graphql-ws returns every open subscription on close; their places under the caps go now.
        extra.socket.once('close', () => {
          metrics?.websocketClosed();
          if (spans) for (const requestId of spans.keys()) if (requestId.startsWith(`${conn.connectionId}/`)) endSpan(requestId);
          for (const id of [...conn.subscriptions]) caps.release(conn, id);
          for (const guarded of conn.guarded.values()) guarded.release();
          conn.guarded.clear();
        });
        return true;
      },
      async onSubscribe(ctx, id, payload): Promise<ExecutionArgs | readonly GraphQLError[]> {
        const conn = (ctx.extra as WsExtra).conn!;
        const caller = conn.caller!;
        const requestId = `${conn.connectionId}/${id}`;
        const span = spans ? startOperationSpan((payload.extensions as { traceparent?: unknown } | undefined)?.traceparent) : undefined;
        if (span) spans!.set(requestId, span);
        // Every operation is a request of its own, as over HTTP: the same admission (the credential
        // checked again: a deletion not yet announced, an expiry; the catalog's permissions and rate
        // units; the caps). A subscription is then held to its key's permissions while it runs.
        const hold = (operation: OperationDefinitionNode, needs: readonly KeyPermission[]) => {
          if (operation.operation !== 'subscription') return undefined;
          const over = caps.take(conn, id);
          if (over) return over;
          const guarded = caller.guard(needs);
          if (!guarded.signal.aborted) return void conn.guarded.set(id, guarded);
          caps.release(conn, id);
          return guarded.signal.reason as AppError;
        };
        const query = await documentOf(caller.principal, payload);
        if (typeof query !== 'string') return [query];
        const admitted = await opts.admission.admit({ query, operationName: payload.operationName }, { principal: caller.principal, recheck: caller.recheck, hold });
        if (!admitted.ok) return admitted.kind === 'invalid' ? admitted.errors : [refusalError(admitted.error)];
        const { document, principal } = admitted;
        if (span) nameOperationSpan(span, getOperationAST(document, payload.operationName));
        caller.active++;
        const request = (ctx.extra as WsExtra).request;
        return {
          schema: execution.schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: createContext({
            services,
            principal,
            requestId,
            urls: { baseUrl: baseUrlOf({ headers: request.headers, protocol: isEncrypted(request) ? 'https' : 'http' }) },
            signal: conn.guarded.get(id)?.signal ?? caller.signal,
            ip: request.socket.remoteAddress ?? null,
          }),
        };
      },
      // Admitted operations: a query or mutation by its result, a subscription as it starts.
      onOperation: metrics
        ? (_ctx, _id, _payload, args, result) => {
            const type = getOperationAST(args.document, args.operationName)?.operation ?? 'unknown';
            const failed = !(Symbol.asyncIterator in (result as object)) && Boolean((result as ExecutionResult).errors?.length);
            metrics.graphqlOperation(type, failed ? 'error' : 'ok');
          }
        : undefined,
      onNext(_ctx, _id, _payload, args, result) {
        return formatResult(result as ExecutionResult, (args.contextValue as GraphQLContext).requestId, execution.formatError, log);
      },
      // Refused before execution (syntax, validation, credential, rate limit, caps).
      onError(ctx, id, payload, errors) {
        metrics?.graphqlOperation(operationTypeOf(payload.query), 'error');
        const requestId = `${(ctx.extra as WsExtra).conn?.connectionId}/${id}`;
        endSpan(requestId, errors);
        return errors.map((e) => formatAndLog(e, requestId, execution.formatError, log));
      },
      onComplete(ctx, id) {
        const conn = (ctx.extra as WsExtra).conn;
        if (!conn?.caller) return;
        endSpan(`${conn.connectionId}/${id}`);
        conn.caller.active = Math.max(0, conn.caller.active - 1);
        caps.release(conn, id);
        conn.guarded.get(id)?.release();
        conn.guarded.delete(id);
      },
    },
    wss,
  );

  // Refused upgrades answer in the contract's shape, as every HTTP error does.
  wss.on('wsClientError', (err: Error, socket: Duplex) => refuseConnection(socket, new AppError('malformed_request', { message: `Invalid WebSocket handshake: ${err.message}` }), log));
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refusal = upgradeRefusal(req, { path: opts.path, hostAllowed: opts.hostAllowed, databaseDown: opts.databaseDown });
    if (refusal) return refuseConnection(socket, refusal, log);
    wss.handleUpgrade(req, socket, head, (client) => wss.emit('connection', client, req));
  };
  app.server.on('upgrade', onUpgrade);

  return {
    async close() {
      callers.dispose();
      app.server.off('upgrade', onUpgrade);
      await server.dispose();
    },
  };
}

/** Whose caps a connection counts against: its key's, or (console tokens) its user's. */
function capsKeyOf(principal: { keyId: string | null; userId?: string }): string {
  return principal.keyId ?? `console:${principal.userId ?? ''}`;
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

/** The type of an operation that may not parse: its first keyword (the shorthand `{ … }` is a query). */
function operationTypeOf(query: string): string {
  const keyword = /^\s*(query|mutation|subscription)\b/.exec(query)?.[1];
  return keyword ?? (/^\s*\{/.test(query) ? 'query' : 'unknown');
}
