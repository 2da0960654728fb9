/**
 * `/graphql`: one schema, two transports on the same path and port. This file only wires them:
 *  - http-door.ts: Apollo Server 5 on Fastify (status codes, CSRF prevention, limits, CORS preflight);
 *  - socket-door.ts: graphql-ws (`graphql-transport-ws`);
 *  - execution.ts: the schema, limits and error formatting both use.
 * Who is calling (API key or client token), CORS, upgrade admission and socket endings are the edge's
 * (src/edge/credentials.ts, cors.ts, sockets.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { GraphQLSchema } from 'graphql';
import type { Config } from '../../config.js';
import { createCredentials, type Credentials } from '../../edge/credentials.js';
import type { TransportMetrics } from '../../edge/metrics.js';
import { hostPolicy, type HostPolicy } from '../../edge/host.js';
import type { GraphQLServices } from '../../graphql/context.js';
import type { BaseUrlOf } from '../routes/types.js';
import { operationAdmission } from './admission.js';
import { buildExecution } from './execution.js';
import { registerHttpDoor } from './http-door.js';
import { attachSocketDoor } from './socket-door.js';
import { documentCheck, documentRoutes } from './trusted-documents.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLDoor {
  readonly schema: GraphQLSchema;
  /** Closes WebSocket connections (1001) and stops Apollo; runs by itself when the app closes. */
  close(): Promise<void>;
}

export interface GraphQLDoorOptions {
  config: Config;
  /** The services as this deployment exposes them (src/edge/exposed.ts). */
  services: GraphQLServices;
  /** Who is calling, as the HTTP edge decides it; default: API keys only (services.keys). */
  credentials?: Credentials;
  /** Base address of image URLs for a request (the app's rule, shared with REST). */
  baseUrlOf?: BaseUrlOf;
  /** The edge's Host rule (ALLOWED_HOSTS), for WebSocket upgrades; default: any host. */
  hostAllowed?: HostPolicy;
  /** True while the database is known down: upgrades and socket operations are refused at once. */
  databaseDown?: () => boolean;
  /** Told of every operation (HTTP and WebSocket) and every WebSocket opened and closed. */
  metrics?: Pick<TransportMetrics, 'graphqlOperation' | 'websocketOpened' | 'websocketClosed'>;
}

/** Registers `/graphql` (HTTP and WebSocket) on `app`. Call before `app.listen()`/`app.ready()`. */
export async function registerGraphQL(app: FastifyInstance, opts: GraphQLDoorOptions): Promise<GraphQLDoor> {
  const { config, services } = opts;
  const baseUrlOf = opts.baseUrlOf ?? defaultBaseUrl;
  const execution = await buildExecution(config);
  const credentials = opts.credentials ?? createCredentials({ keys: services.keys });
  // One admission for both transports: the catalog's permissions and rate units, the credential, the caps.
  const admission = operationAdmission({ execution, credentials });
  if (services.documents) await app.register(documentRoutes, { documents: services.documents, check: documentCheck(execution) });
  const apollo = await registerHttpDoor(app, { path: GRAPHQL_PATH, config, services, admission, execution, baseUrlOf, metrics: opts.metrics });
  const sockets = attachSocketDoor(app, {
    path: GRAPHQL_PATH,
    config,
    services,
    credentials,
    admission,
    execution,
    baseUrlOf,
    hostAllowed: opts.hostAllowed ?? hostPolicy(undefined),
    databaseDown: opts.databaseDown ?? (() => false),
    metrics: opts.metrics,
  });

  let socketsClosing: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  const closeSockets = () => (socketsClosing ??= sockets.close());
  const close = () =>
    (closing ??= (async () => {
      await closeSockets();
      await apollo.stop();
    })());
  // WebSockets in preClose: open ones would otherwise keep Fastify's close waiting for them. Apollo in
  // onClose, once the server has answered the requests in flight: a stopped Apollo fails them.
  app.addHook('preClose', closeSockets);
  app.addHook('onClose', close);
  return { schema: execution.schema, close };
}

function defaultBaseUrl(req: { headers: { host?: string }; protocol: 'http' | 'https' }): string {
  return `${req.protocol}://${req.headers.host ?? 'localhost'}`;
}
