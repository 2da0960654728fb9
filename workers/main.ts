/**
 * Standalone image worker: `npm run worker`. Any number may run, on any machine sharing the database
 * (MONGODB_URI). SIGTERM/SIGINT: stop taking work, finish the images already running, exit.
 */
import { loadConfig, ConfigError } from '../src/config.js';
import { connectDatabase } from '../src/data/connection.js';
import { buildServices } from '../src/services.js';
import type { Logger } from '../src/domain/logger.js';
import { startConfiguredImageWorker } from './image-worker.js';

function jsonLogger(level: string): Logger {
  const quiet = level === 'silent' || level === 'fatal' || level === 'error';
  const write = (lvl: string) => (obj: object, msg?: string) => {
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: lvl, pid: process.pid, msg, ...obj })}\n`);
  };
  return {
    info: quiet || level === 'warn' ? () => {} : write('info'),
    warn: level === 'silent' || level === 'fatal' || level === 'error' ? () => {} : write('warn'),
    error: level === 'silent' ? () => {} : write('error'),
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const log = jsonLogger(config.LOG_LEVEL);
  if (!config.MONGODB_URI) {
    throw new ConfigError('Invalid configuration:\n  MONGODB_URI: is required for a standalone worker (it shares the gateway’s database)');
  }
  const connection = await connectDatabase(config.MONGODB_URI, { serverSelectionTimeoutMS: 10_000 });
  const services = await buildServices(config, { connection, logger: log });
  const worker = await startConfiguredImageWorker(config, services.imageJobs, log);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'worker draining running images');
    try {
      await worker.stop(Math.max(config.JOB_LOCK_LIFETIME_MS, 30_000));
      await services.close();
      await connection.close();
      log.info({}, 'worker stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err: String(err) }, 'worker shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `worker failed to start: ${String((err as Error)?.stack ?? err)}`}\n`);
  process.exit(1);
});
