/**
 * Prometheus metrics of one process (gateway or worker), with prom-client: the contract's names and
 * labels (docs/production.md lists them). Counters are told by the domain where it decides
 * (DomainMetrics), by the HTTP edge per response (TransportMetrics), and read on scrape for what is a
 * state (database_up, image_queue_depth). Labels are closed sets or route templates: nothing grows with
 * users, keys or ids. Served on METRICS_PORT only (./server.ts), never on the API port.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FinalJobStatus } from '../domain/jobs/types.js';
import type { DeliveryOutcome, DomainMetrics, ImageOutcome } from '../domain/metrics.js';
import type { MeteredService } from '../domain/usage/types.js';
import type { TransportMetrics } from '../edge/metrics.js';

type HttpLabels = 'method' | 'route' | 'status_code';

/**
 * prom-client's gauges named like counters: Debian's promtool rejects a gauge ending in `_total`. Left
 * out; the same counts by type stay (nodejs_active_handles{type}, nodejs_active_resources{type}).
 */
const GAUGES_NAMED_AS_COUNTERS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** What is read at scrape time; each is optional (a worker has no sockets). */
export interface MetricSources {
  /** Does the database answer (the readiness check's view)? */
  databaseUp?: () => boolean;
  /** Images waiting in the shared queue (one number for the whole deployment). */
  queueDepth?: () => Promise<number>;
}

export class PrometheusMetrics implements DomainMetrics, TransportMetrics {
  readonly registry = new Registry();
  private sources: MetricSources = {};
  private readonly httpRequests: Counter<'method' | 'route' | 'status_code'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  private readonly graphqlOperations: Counter<'type' | 'outcome'>;
  private readonly charged: Counter<'service'>;
  private readonly refunded: Counter<'service'>;
  private readonly jobsFinished: Counter<'status'>;
  private readonly imagesGenerated: Counter<'outcome'>;
  private readonly generationDuration: Histogram;
  private readonly deliveries: Counter<'outcome'>;
  private readonly rateLimitedRequests: Counter;
  private readonly websockets: Gauge;
  /** One child pair per label set seen, so a response costs two map lookups, not label hashing. */
  private readonly httpChildren = new Map<string, { count: Counter.Internal; duration: Histogram.Internal<HttpLabels> }>();

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    for (const name of GAUGES_NAMED_AS_COUNTERS) this.registry.removeSingleMetric(name);

    this.httpRequests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered, by route template', labelNames: ['method', 'route', 'status_code'], registers });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route template',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.graphqlOperations = new Counter({ name: 'graphql_operations_total', help: 'GraphQL operations (HTTP and WebSocket), by type and outcome', labelNames: ['type', 'outcome'], registers });
    this.charged = new Counter({ name: 'credits_charged_total', help: 'Credits charged, by service', labelNames: ['service'], registers });
    this.refunded = new Counter({ name: 'credits_refunded_total', help: 'Credits refunded, by service', labelNames: ['service'], registers });
    this.jobsFinished = new Counter({ name: 'image_jobs_finished_total', help: 'Image jobs that reached a final status', labelNames: ['status'], registers });
    this.imagesGenerated = new Counter({ name: 'images_generated_total', help: 'Image generation attempts recorded, by outcome', labelNames: ['outcome'], registers });
    this.generationDuration = new Histogram({
      name: 'image_generation_duration_seconds',
      help: "The image provider's time per attempt",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
      registers,
    });
    this.deliveries = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (delivered, retry, gave_up)', labelNames: ['outcome'], registers });
    this.rateLimitedRequests = new Counter({ name: 'rate_limited_requests_total', help: 'Requests and operations refused by the per-key rate limit', registers });
    this.websockets = new Gauge({ name: 'websocket_connections', help: 'Open GraphQL WebSocket connections (acknowledged)', registers });
    const sources = () => this.sources;
    new Gauge({
      name: 'database_up',
      help: '1 while the database answers, else 0',
      registers,
      collect() {
        const up = sources().databaseUp;
        if (up) this.set(up() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'image_queue_depth',
      help: 'Images waiting in the shared queue (not yet claimed by a worker)',
      registers,
      async collect() {
        const depth = sources().queueDepth;
        // Unknown (database down): the series goes missing rather than showing a false 0.
        if (depth) this.set(await depth().catch(() => Number.NaN));
      },
    });
    // Every series with a closed label set starts at 0, so rates and alerts see it before its first event.
    for (const service of ['definitions', 'images'] as const) {
      this.charged.labels(service).inc(0);
      this.refunded.labels(service).inc(0);
    }
    for (const status of ['completed', 'failed', 'canceled'] as const) this.jobsFinished.labels(status).inc(0);
    for (const outcome of ['succeeded', 'failed', 'retried'] as const) this.imagesGenerated.labels(outcome).inc(0);
    for (const outcome of ['delivered', 'retry', 'gave_up'] as const) this.deliveries.labels(outcome).inc(0);
    for (const type of ['query', 'mutation', 'subscription'] as const) for (const outcome of ['ok', 'error'] as const) this.graphqlOperations.labels(type, outcome).inc(0);
  }

  /** Binds what is read at scrape time (once the services exist). */
  observe(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** The Prometheus text exposition. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
    const key = `${method} ${statusCode} ${route}`;
    let child = this.httpChildren.get(key);
    if (!child) {
      const labels = { method, route, status_code: String(statusCode) };
      child = { count: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      this.httpChildren.set(key, child);
    }
    child.count.inc();
    child.duration.observe(seconds);
  }

  graphqlOperation(type: string, outcome: 'ok' | 'error'): void {
    this.graphqlOperations.labels(type, outcome).inc();
  }

  websocketOpened(): void {
    this.websockets.inc();
  }

  websocketClosed(): void {
    this.websockets.dec();
  }

  creditsCharged(service: MeteredService, amount: number): void {
    this.charged.labels(service).inc(amount);
  }

  creditsRefunded(service: MeteredService, amount: number): void {
    this.refunded.labels(service).inc(amount);
  }

  imageJobFinished(status: FinalJobStatus): void {
    this.jobsFinished.labels(status).inc();
  }

  imageGenerated(outcome: ImageOutcome, seconds: number | undefined): void {
    this.imagesGenerated.labels(outcome).inc();
    if (seconds !== undefined) this.generationDuration.observe(seconds);
  }

  webhookDelivery(outcome: DeliveryOutcome): void {
    this.deliveries.labels(outcome).inc();
  }

  rateLimited(): void {
    this.rateLimitedRequests.inc();
  }
}
