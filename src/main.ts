/**
 * Gateway entry (`npm start`): config → database → services → buildApp → listen; graceful shutdown.
 * Without MONGODB_URI it starts the embedded MongoDB-compatible server, persisting in DATA_DIR/db, on
 * the port of its last run when that is free, and writes its address there for the CLI and workers
 * (src/data/embedded-address.ts); on an empty database (not in production) it creates a demo account
 * and prints its key once.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import { ConfigError, checkGatewayConfig, loadConfig } from './config.js';
import { connectDatabase, isDatabaseUnavailableError } from './data/connection.js';
import { advertiseEmbedded, embeddedDbPath, findEmbedded, gatewayDatabaseUri, preferredPort } from './data/embedded-address.js';
import { MongoSeedClaimStore } from './data/demo-seed-claim.js';
import { DEMO_CREDITS, DemoSeeder, type DemoAccount } from './domain/demo/seed.js';
import { buildApp } from './http/app.js';
import { PrometheusMetrics } from './metrics/prometheus.js';
import { startMetricsServer, type MetricsServer } from './metrics/server.js';
import { buildServices, type Services } from './services.js';
import { flushTraces } from './tracing/context.js';
import { startConfiguredImageWorker, type RunningWorker } from '../workers/image-worker.js';

async function main(): Promise<void> {
  const config = loadConfig();
  checkGatewayConfig(config);
  let embedded: DevDatabase | undefined;
  let markAddressStopped: (() => Promise<void>) | undefined;
  let uri = config.MONGODB_URI;
  if (!uri) {
    const dbPath = embeddedDbPath(config.DATA_DIR);
    await mkdir(dbPath, { recursive: true });
    // Two servers on the same files would each write them as if alone.
    const running = await findEmbedded(dbPath);
    if (running.ok) {
      throw new ConfigError(`Invalid configuration:\n  MONGODB_URI: is not set, and an embedded database already runs from ${dbPath} (another npm start): stop that one, or share it with MONGODB_URI=${running.uri}`);
    }
    embedded = await startDevDatabase(dbPath, await preferredPort(dbPath));
    uri = gatewayDatabaseUri(embedded.uri);
    // `npm run cli` and `npm run worker` read the address from the data directory.
    markAddressStopped = await advertiseEmbedded(dbPath, embedded.uri);
    say(`MONGODB_URI is not set: started the embedded database at ${uri} (files in ${dbPath}).`);
    say(`With the same DATA_DIR and no MONGODB_URI, npm run cli and npm run worker find it by themselves.`);
  }

  const connection = await connectDatabase(uri, { serverSelectionTimeoutMS: 5000 });
  // METRICS_PORT set: the domain, the edge and the doors count into one registry, served on its own port.
  const metrics = config.METRICS_PORT === undefined ? undefined : new PrometheusMetrics();
  const services = await buildServices(config, { connection, emailLog: say, metrics });
  // Production never gets a demo: its key and password would be printed into the process's logs.
  const demo = config.NODE_ENV === 'production' ? null : await createDemoAccount(services, connection);

  const app = await buildApp({ config, services, metrics });
  // The same backstop as a standalone worker's: a database error that escapes a background task
  // during an outage is logged, not fatal (work resumes when the database is back); anything else is a
  // fault, and the process exits.
  process.on('unhandledRejection', (reason) => {
    if (isDatabaseUnavailableError(reason)) return void app.log.warn({ err: reason }, 'unhandled database error');
    app.log.error({ err: reason }, 'unhandled rejection');
    process.exit(1);
  });
  // Before the gateway listens: a signal that comes while it still starts (the demo account, the
  // metrics server, the in-process worker) waits for the start to finish, then shuts down gracefully.
  // Without a handler yet, Node's default would kill the process and every request it had accepted.
  let signalled: string | undefined;
  let onSignal = (signal: string) => void (signalled ??= signal);
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  await app.listen({ port: config.PORT, host: config.HOST });
  const { port } = app.server.address() as { port: number };
  const base = `http://${config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST}:${port}`;
  say(`Gateway listening on ${base} (services: ${config.SERVICES.join(', ')}).`);
  let metricsServer: MetricsServer | undefined;
  if (metrics) {
    metrics.observe({ databaseUp: () => !services.health.knownDown(), queueDepth: () => services.imageJobs.queue.depth() });
    metricsServer = await startMetricsServer(metrics, { port: config.METRICS_PORT!, host: config.HOST });
    say(`Metrics on ${base.replace(/:\d+$/, `:${metricsServer.port}`)}/metrics.`);
  }
  if (config.NODE_ENV === 'production' && (await services.credits.isEmpty())) {
    say('Empty database: no demo account in production; create accounts and keys with the admin CLI (npm run cli).');
  }
  if (demo) {
    say(`Empty database: created a demo account with ${DEMO_CREDITS} credits. Its API key, shown only this once:\n\n    ${demo.key}\n`);
    say(`Try: curl -s -X POST ${base}/api/playground/query -H "Authorization: Bearer ${demo.key}" -H 'Content-Type: application/json' -d '{"keyword":"serendipity"}'`);
    say(`Console: ${base}/console  (sign in as ${demo.email} with password ${demo.password}; shown only this once)`);
  }
  let worker: RunningWorker | undefined;
  if (config.IN_PROCESS_WORKER) {
    worker = await startConfiguredImageWorker(config, services.imageJobs, app.log, services.billing);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const budget = config.SHUTDOWN_TIMEOUT_MS;
    app.log.info({ signal, timeoutMs: budget }, 'shutting down');
    const timer = setTimeout(() => {
      app.log.error({}, 'shutdown took too long: exiting');
      process.exit(1);
    }, budget);
    timer.unref();
    // Requests in flight first (their enqueues need the queue the worker's stop closes), then running
    // images, then the services and the database, each within its share of the budget.
    const deadline = Date.now() + budget;
    const forceClose = setTimeout(() => {
      app.log.warn({}, 'shutdown: closing connections still open');
      app.server.closeAllConnections();
    }, budget * 0.4);
    forceClose.unref();
    try {
      // Stop accepting; answer what is in flight with Connection: close; close idle keep-alive sockets
      // and WebSockets (1001).
      await app.close();
      clearTimeout(forceClose);
      await metricsServer?.close();
      // Running images finish (drain); queued ones stay in the queue for any other worker.
      await worker?.stop(Math.max(0, deadline - budget * 0.2 - Date.now()));
      await services.close();
      await connection.close();
      // Marked stopped first: nobody should find a server that is going away.
      await markAddressStopped?.();
      await embedded?.stop();
      app.log.info({ signal }, 'shut down');
      await flushTraces();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  onSignal = (signal) => void shutdown(signal);
  if (signalled) void shutdown(signalled);
}

/** What main needs of the embedded database. */
interface DevDatabase {
  uri: string;
  stop(): Promise<void>;
}

/** The embedded server (never in production: checkGatewayConfig requires MONGODB_URI there). */
const EMBEDDED_MONGO = '@credit-gateway/embedded-mongo';

/**
 * Loaded only here, by a specifier the compiler does not follow: the package is a devDependency, run
 * as TypeScript through tsx, absent from production installs (`npm ci --omit=dev`), and never part of
 * the compiled build.
 */
async function startDevDatabase(dbPath: string, port: number): Promise<DevDatabase> {
  let mod: { startEmbeddedMongo(options: { port: number; dbPath: string }): Promise<DevDatabase> };
  try {
    mod = (await import(EMBEDDED_MONGO)) as typeof mod;
  } catch (err) {
    throw new ConfigError(
      `Invalid configuration:\n  MONGODB_URI: is not set, and the embedded database cannot be loaded here (${(err as { code?: string }).code ?? (err as Error).message}): it is a development dependency run through tsx (npm start). Set MONGODB_URI, or start one with \`npm run db\` in a development checkout.`,
    );
  }
  return mod.startEmbeddedMongo({ port, dbPath });
}

/** The demo, seeded by whichever instance claims it first (see DemoSeeder). */
function createDemoAccount(services: Services, connection: Connection): Promise<DemoAccount | null> {
  return new DemoSeeder({
    claims: new MongoSeedClaimStore(connection),
    credits: services.credits,
    keys: services.keys,
    users: services.console.users,
    actor: { actor: 'gateway:demo-bootstrap', ip: null, host: hostname() },
    holder: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
  }).seed();
}

function say(message: string): void {
  process.stdout.write(`${message}\n`);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
  else process.stderr.write(`gateway failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
