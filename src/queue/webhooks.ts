import type { Connection } from 'mongoose';
import { webhookRetrySchedule, type Config } from '../config.js';
import { MongoJobEventOutbox } from '../data/job-outbox.js';
import { MongoLowCreditsStore } from '../data/low-credits.js';
import { MongoDeliveryStore, MongoEndpointStore } from '../data/webhooks.js';
import type { ImageUrlSigner } from '../domain/jobs/signed-urls.js';
import { toJobView } from '../domain/jobs/view.js';
import type { Logger } from '../domain/logger.js';
import type { DomainMetrics } from '../domain/metrics.js';
import { WebhookDeliverer } from '../domain/webhooks/deliverer.js';
import { WebhookEndpoints } from '../domain/webhooks/endpoints.js';
import { LowCreditsAlerts } from '../domain/webhooks/low-credits.js';
import type { HostResolver, WebhookTransport } from '../domain/webhooks/ports.js';
import { WebhookPublisher } from '../domain/webhooks/publisher.js';
import { WebhookSweeper } from '../domain/webhooks/sweep.js';
import { httpTransport, systemResolver } from '../providers/webhooks/http-transport.js';
import type { ImageQueue } from './image-queue.js';
import { WebhookQueue } from './webhook-queue.js';

/** The contract: a 2xx within 15 s acknowledges a delivery. */
export const WEBHOOK_TIMEOUT_MS = 15_000;

/** Everything webhooks need, built once per process (gateway and worker alike). */
export interface WebhooksModule {
  endpoints: WebhookEndpoints;
  publisher: WebhookPublisher;
  alerts: LowCreditsAlerts;
  deliverer: WebhookDeliverer;
  sweeper: WebhookSweeper;
  queue: WebhookQueue;
}

export async function openWebhooks(deps: {
  config: Config;
  connection: Connection;
  /** The process's queue: deliveries ride on its Agenda instance. */
  imageQueue: ImageQueue;
  signer: ImageUrlSigner;
  log: Logger;
  /** Tests inject a resolver (a name resolving to loopback) and may inject a transport. */
  resolve?: HostResolver;
  transport?: WebhookTransport;
  metrics?: DomainMetrics;
}): Promise<WebhooksModule> {
  const { config, connection, log } = deps;
  if (!connection.db) throw new Error('openWebhooks needs a connected database');
  const endpointStore = new MongoEndpointStore(connection);
  const deliveries = new MongoDeliveryStore(connection);
  const outbox = new MongoJobEventOutbox(connection);
  const lowCredits = new MongoLowCreditsStore(connection);
  await Promise.all([endpointStore.init(), deliveries.init(), outbox.init(), lowCredits.init()]);
  const queue = await WebhookQueue.open(deps.imageQueue.agenda, connection.db);
  const resolve = deps.resolve ?? systemResolver;
  const allowPrivate = config.WEBHOOK_ALLOW_PRIVATE_URLS;
  const publisher = new WebhookPublisher({
    endpoints: endpointStore,
    deliveries,
    queue,
    outbox,
    lowCredits,
    jobView: (job, baseUrl) => toJobView(job, deps.signer, baseUrl),
    publicBaseUrl: config.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
  });
  return {
    endpoints: new WebhookEndpoints({ endpoints: endpointStore, deliveries, queue, lowCredits, resolve, allowPrivate }),
    publisher,
    alerts: new LowCreditsAlerts({ store: lowCredits, publisher, onBackgroundError: (err) => log.warn({ err }, 'webhooks: publishing credits.low failed') }),
    deliverer: new WebhookDeliverer({
      deliveries,
      endpoints: endpointStore,
      transport: deps.transport ?? httpTransport,
      resolve,
      allowPrivate,
      scheduleMs: webhookRetrySchedule(config),
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      metrics: deps.metrics,
    }),
    sweeper: new WebhookSweeper({ outbox, lowCredits, deliveries, queue, publisher }),
    queue,
  };
}
