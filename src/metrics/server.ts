/**
 * The metrics listener: `GET /metrics` on METRICS_PORT, a server of its own (never the API's port, so
 * the API's edge, auth and rate limit neither see nor count scrapes, and the port can stay private).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PrometheusMetrics } from './prometheus.js';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(metrics: PrometheusMetrics, options: { port: number; host: string }): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at GET /metrics\n');
      return;
    }
    metrics.text().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(request.method === 'HEAD' ? undefined : body),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n'),
    );
  });
  // Scrapes come every few seconds on a kept-alive connection; idle ones must not hold a shutdown.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
