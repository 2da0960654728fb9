/**
 * Standalone image worker: `npm run worker`. Any number may run, on any machine sharing the database
 * (MONGODB_URI; unset, the embedded database that `npm start` runs from DATA_DIR/db on this machine). Nothing restarts a worker, so it rides out database outages: started during one, it
 * waits for the database; hit by one, it pauses and resumes by itself when the database is back.
 * SIGTERM/SIGINT: stop taking work, finish the images already running, close, exit 0; bounded by
 * max(JOB_LOCK_LIFETIME_MS, 30 s) for the drain plus 5 s per closing step, and prompt when the
 * database is down (running images could not store their results; another worker retries them).
 */
import { createRequire } from 'node:module';
import type { Connection } from 'mongoose';
import { loadConfig, ConfigError, type Config } from '../src/config.js';
import { connectDatabase, databaseHealth, isDatabaseUnavailableError } from '../src/data/connection.js';
import { sharedDatabaseUri } from '../src/data/embedded-address.js';
import type { Logger } from '../src/domain/logger.js';
import { PrometheusMetrics } from '../src/metrics/prometheus.js';
import { startMetricsServer, type MetricsServer } from '../src/metrics/server.js';
import { describeError } from '../src/queue/queue-errors.js';
import { flushTraces } from '../src/tracing/context.js';
import { startConfiguredImageWorker, type RunningWorker } from './image-worker.js';
import { buildWorkerServices, type WorkerServices } from './services.js';

/**
 * pino, as the gateway's Fastify logs: numeric level, epoch-ms time, pid and hostname. Required, not
 * imported, as Fastify requires it: so the tracing's pino instrumentation patches it, and a line
 * written inside a span carries its `trace_id` and `span_id` as the gateway's do.
 */
function jsonLogger(level: Config['LOG_LEVEL']): Logger {
  const { pino } = createRequire(import.meta.url)('pino') as typeof import('pino');
  return pino({ level });
}

/** Each closing step gets this long; a database that is down must not hold the process. */
const CLOSE_STEP_TIMEOUT_MS = 5_000;
/** Between attempts to start while the database is unreachable (each waits for server selection first). */
const START_RETRY_MAX_MS = 10_000;

interface Started {
  connection: Connection;
  services: WorkerServices;
  worker: RunningWorker;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const log = jsonLogger(config.LOG_LEVEL);
  // The gateway's database: MONGODB_URI, or the embedded one `npm start` runs from DATA_DIR/db.
  const uri = await sharedDatabaseUri(config);

  // Backstop. Driver errors are handled where they arise (queue, change stream, heartbeats, sweep);
  // one that still escapes as an unhandled rejection during an outage must not end the process, as
  // nothing would restart it. Any other unhandled rejection is a bug: log it and exit, as Node would.
  process.on('unhandledRejection', (reason) => {
    if (isDatabaseUnavailableError(reason)) {
      log.warn({ err: describeError(reason) }, 'unhandled database error');
      return;
    }
    log.error({ err: describeError(reason) }, 'unhandled rejection');
    process.exit(1);
  });

  // Served from the start: while the database is unreachable a scrape says database_up 0.
  const metrics = config.METRICS_PORT === undefined ? undefined : new PrometheusMetrics();
  let metricsServer: MetricsServer | undefined;
  if (metrics) {
    metrics.observe({ databaseUp: () => false });
    metricsServer = await startMetricsServer(metrics, { port: config.METRICS_PORT!, host: config.HOST });
    log.info({ port: metricsServer.port }, 'metrics listening');
  }

  let started: Started | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (!started) {
      // Still waiting for the database: nothing was claimed yet.
      log.info({ signal }, 'worker stopped before it started');
      process.exit(0);
    }
    const { connection, services, worker } = started;
    log.info({ signal }, 'worker draining running images');
    try {
      // Bounded by itself: it stops waiting at the deadline, or as soon as the database is unreachable.
      await worker.stop(Math.max(config.JOB_LOCK_LIFETIME_MS, 30_000));
      await cleanup(services.close(), 'closing services', log);
      await cleanup(metricsServer?.close() ?? Promise.resolve(), 'closing the metrics listener', log);
      // force: with the database down there is nothing to end gracefully.
      await cleanup(connection.close(connection.readyState !== 1), 'closing the database connection', log);
      log.info({}, 'worker stopped');
      await cleanup(flushTraces(), 'sending the last traces', log);
      process.exit(0);
    } catch (err) {
      log.error({ err: describeError(err) }, 'worker shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  for (let attempt = 1; !started; attempt++) {
    try {
      started = await start(config, uri, log, metrics);
    } catch (err) {
      if (!isDatabaseUnavailableError(err)) throw err;
      const retryInMs = Math.min(1000 * 2 ** (attempt - 1), START_RETRY_MAX_MS);
      log.warn({ err: describeError(err), attempt, retryInMs }, 'database unreachable at startup: waiting for it');
      await new Promise((r) => setTimeout(r, retryInMs));
    }
  }
  const { connection } = started;
  // The driver reconnects by itself; these say when work pauses and when it can resume.
  connection.on('disconnected', () => stopping || log.warn({}, 'database connection lost'));
  connection.on('reconnected', () => log.info({}, 'database connection back'));
}

/** Connects, builds the worker's services and starts processing; undoes what it did if a step fails. */
async function start(config: Config, uri: string, log: Logger, metrics: PrometheusMetrics | undefined): Promise<Started> {
  const connection = await connectDatabase(uri, { serverSelectionTimeoutMS: 10_000 });
  try {
    const services = await buildWorkerServices(config, { connection, logger: log, metrics });
    const health = databaseHealth(connection);
    metrics?.observe({ databaseUp: () => !health.knownDown(), queueDepth: () => services.imageJobs.queue.depth() });
    try {
      const worker = await startConfiguredImageWorker(config, services.imageJobs, log, services.billing);
      return { connection, services, worker };
    } catch (err) {
      await services.close().catch(() => undefined);
      throw err;
    }
  } catch (err) {
    await connection.close(true).catch(() => undefined);
    throw err;
  }
}

/**
 * Waits for a closing step, at most CLOSE_STEP_TIMEOUT_MS. Its failure or timeout is logged, not fatal:
 * the work is drained by then, and what is left to close goes away with the process.
 */
async function cleanup(work: Promise<unknown>, what: string, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), CLOSE_STEP_TIMEOUT_MS)));
  try {
    const outcome = await Promise.race([work.then(() => 'done' as const), timedOut]);
    if (outcome !== 'done') log.warn({ timeoutMs: CLOSE_STEP_TIMEOUT_MS }, `${what} timed out`);
  } catch (err) {
    log.warn({ err: describeError(err) }, `${what} failed`);
  } finally {
    clearTimeout(timer);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `worker failed to start: ${String((err as Error)?.stack ?? err)}`}\n`);
  process.exit(1);
});
