/**
 * Requests while the database is known to be down get a 503 database_unavailable with Retry-After at
 * once, before authentication or any work: every door needs the database, and each request would
 * otherwise wait out the driver's server selection (seconds) to fail the same way. Routes that
 * answer without it (health probes) say so with `config: { withoutDatabase: true }`.
 */
import type { FastifyInstance } from 'fastify';
import type { HealthCheck } from '../data/connection.js';
import { AppError } from '../domain/errors.js';
import { RETRY_AFTER_SECONDS } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answers while the database is down (health probes). */
    withoutDatabase?: boolean;
  }
}

export function databaseUnavailable(): AppError {
  return new AppError('database_unavailable', { retryAfter: RETRY_AFTER_SECONDS });
}

export function registerDatabaseGate(app: FastifyInstance, health: Pick<HealthCheck, 'knownDown'>): void {
  app.addHook('onRequest', async function databaseGate(request) {
    if (!request.routeOptions.config?.withoutDatabase && health.knownDown()) throw databaseUnavailable();
  });
}
