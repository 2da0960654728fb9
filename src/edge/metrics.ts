/**
 * What the doors tell the process's metrics (src/metrics/prometheus.ts when METRICS_PORT is set):
 * each HTTP response by route template, each GraphQL operation, WebSocket connections.
 */
import type { FastifyInstance } from 'fastify';

export interface TransportMetrics {
  httpRequest(method: string, route: string, statusCode: number, seconds: number): void;
  /** `type`: query, mutation, subscription, or unknown (the operation could not be told). */
  graphqlOperation(type: string, outcome: 'ok' | 'error'): void;
  websocketOpened(): void;
  websocketClosed(): void;
}

/** The label of a request no route matched (404s, probes of random paths): one series for all. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Counts every response under its route template (`/api/playground/images/:jobId`, never the id).
 * Fastify's not-found handler has no template: all such requests share UNMATCHED_ROUTE.
 */
export function registerHttpMetrics(app: FastifyInstance, metrics: TransportMetrics): void {
  app.addHook('onResponse', function countResponse(request, reply, done) {
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
    metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
