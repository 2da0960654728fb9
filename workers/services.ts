/**
 * Composition root of a standalone worker process: only what running image jobs and delivering
 * webhooks needs. A worker refunds failed images (credits, with their audit entries), claims and
 * completes images (job store, image store, provider), publishes and delivers webhooks, and runs the
 * queue and its sweeps. It serves no requests, so it builds no keys or key change feed, no
 * definitions, no job service or job events for subscriptions.
 *
 * The gateway hosts a worker too (IN_PROCESS_WORKER), so its root builds the same work with the
 * functions exported here: one definition of how the queue, webhooks and image work are wired,
 * whichever process runs them. The order they are called in is the dependency order (no cycle):
 * queue and signer → webhooks (the low-balance alert among them) → credits, told of every balance
 * change → image work, which settles jobs with those credits.
 */
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import { creditPacks, imageRetention, webhookRetrySchedule, type Config } from '../src/config.js';
import { MongoAccountStore } from '../src/data/accounts.js';
import { MongoAuditStore } from '../src/data/audit.js';
import { MongoJobEventOutbox } from '../src/data/job-outbox.js';
import { MongoJobStore } from '../src/data/jobs.js';
import { loadOrCreateSigningSecret } from '../src/data/jobs-signing-secret.js';
import { MongoLowCreditsStore } from '../src/data/low-credits.js';
import { MongoDeliveryStore, MongoEndpointStore } from '../src/data/webhooks.js';
import { CreditService } from '../src/domain/credits/service.js';
import type { JobCredits } from '../src/domain/jobs/records.js';
import { ImageRunner } from '../src/domain/jobs/runner.js';
import { JobSettlement } from '../src/domain/jobs/settlement.js';
import { ImageUrlSigner } from '../src/domain/jobs/signed-urls.js';
import { JobSweeper } from '../src/domain/jobs/sweep.js';
import { KeySweeper } from '../src/domain/keys/sweep.js';
import { MongoKeyCreditStore } from '../src/data/key-credits.js';
import { MongoKeyStore } from '../src/data/keys.js';
import { signedViewing, toJobView } from '../src/domain/jobs/view.js';
import { silentLogger, type Logger } from '../src/domain/logger.js';
import type { DomainMetrics } from '../src/domain/metrics.js';
import { WEBHOOK_TIMEOUT_MS, WebhookDeliverer } from '../src/domain/webhooks/deliverer.js';
import { LowCreditsAlerts } from '../src/domain/webhooks/low-credits.js';
import type { HostResolver, WebhookTransport } from '../src/domain/webhooks/ports.js';
import { WebhookPublisher } from '../src/domain/webhooks/publisher.js';
import { WebhookSweeper } from '../src/domain/webhooks/sweep.js';
import { createImageProvider, type ImageProvider } from '../src/providers/images/index.js';
import { httpTransport, systemResolver } from '../src/providers/webhooks/http-transport.js';
import { ImageQueue } from '../src/queue/image-queue.js';
import { WebhookQueue } from '../src/queue/webhook-queue.js';
import { openImageStore } from '../src/storage/index.js';
import { ImageRetention } from '../src/domain/jobs/retention.js';
import type { PresignedUrls } from '../src/domain/jobs/view.js';
import { MongoBillingAccountStore } from '../src/data/billing-accounts.js';
import { MongoPurchaseStore } from '../src/data/purchases.js';
import type { AuditStore } from '../src/domain/audit/types.js';
import { PurchaseFulfilment } from '../src/domain/billing/fulfilment.js';
import type { PaymentEvent } from '../src/domain/billing/ports.js';
import { AutoRecharge } from '../src/domain/billing/recharge.js';
import { BillingService } from '../src/domain/billing/service.js';
import { RechargeTrigger } from '../src/domain/billing/trigger.js';
import type { Catalog } from '../src/domain/billing/types.js';
import type { RechargeState } from '../src/domain/credits/records.js';
import { StripePayments, stripeClient, stripeEventVerifier } from '../src/providers/stripe/index.js';
import { AgendaRechargeQueue } from '../src/queue/billing-queue.js';
import type { ImageStore } from '../src/storage/types.js';

/** Webhooks as a process that publishes and delivers them has them. */
export interface WebhookWork {
  readonly publisher: WebhookPublisher;
  /** `credits.low`: told of every balance change by the process's credit service. */
  readonly alerts: LowCreditsAlerts;
  readonly deliverer: WebhookDeliverer;
  readonly sweeper: WebhookSweeper;
  readonly queue: WebhookQueue;
  /** The stores, for the gateway's endpoint service. */
  readonly stores: { readonly endpoints: MongoEndpointStore; readonly deliveries: MongoDeliveryStore; readonly lowCredits: MongoLowCreditsStore };
  /** Resolves webhook hosts (DNS; tests replace it). */
  readonly resolve: HostResolver;
}

/** Image jobs as a process that runs them has them: what the worker door (workers/image-worker.ts) drives. */
export interface ImageWork {
  readonly queue: ImageQueue;
  readonly store: MongoJobStore;
  readonly signer: ImageUrlSigner;
  readonly images: ImageStore;
  /** IMAGE_URL_MODE=presigned: the store's presigned URLs for the views. */
  readonly presigned?: PresignedUrls;
  readonly provider: ImageProvider;
  /** Deletes images older than IMAGE_RETENTION (run by the workers). */
  readonly retention: ImageRetention;
  /** The one settlement for the three doors into a job's end (cancel, runs, sweep). */
  readonly settlement: JobSettlement;
  readonly runner: ImageRunner;
  readonly sweeper: JobSweeper;
  /** Keys' credit reservations left by dead processes, and `key.expiring`: swept with the jobs. */
  readonly keys?: KeySweeper;
  /** Webhooks ride on the same queue; a job that ends publishes its event through them. */
  readonly webhooks: WebhookWork;
}

/** Buying credits as a process has it: the Billing page's rules, Stripe's events, automatic recharge. */
export interface BillingWork {
  readonly catalog: Catalog;
  readonly service: BillingService;
  readonly fulfilment: PurchaseFulfilment;
  /** The workers' part of automatic recharge (charging the card), and the billing sweep's. */
  readonly autoRecharge: AutoRecharge;
  /** Null without STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET: the webhook route answers 404. */
  readonly verify: ((rawBody: Buffer, signature: string | undefined) => PaymentEvent) | null;
}

export interface WorkerServices {
  /** The queue, runner, sweeps and deliveries a worker runs (startConfiguredImageWorker). */
  readonly imageJobs: ImageWork;
  /** Automatic recharges and the billing sweep. */
  readonly billing: BillingWork;
  /** Stops the queue's background work. Does not close the connection (the caller owns it). */
  close(): Promise<void>;
}

export interface WorkerServiceDeps {
  connection: Connection;
  logger?: Logger;
  /** Replaces the configured image provider (tests). */
  imageProvider?: ImageProvider;
  /** Host name recorded in refund audit entries; default os.hostname(). */
  host?: string;
  /** Replaces DNS for webhook URLs (tests). */
  webhookResolver?: HostResolver;
  /** Told where the domain decides (refunds, jobs, images, deliveries); default: nothing counted. */
  metrics?: DomainMetrics;
}

export async function buildWorkerServices(config: Config, deps: WorkerServiceDeps): Promise<WorkerServices> {
  const { connection } = deps;
  const log = deps.logger ?? silentLogger;
  const accountStore = new MongoAccountStore(connection);
  const auditStore = new MongoAuditStore(connection);
  await Promise.all([accountStore.init(), auditStore.init()]);

  const queue = await openImageQueue(config, { connection, role: 'worker', log });
  const signer = await openImageUrlSigner(config, connection);
  const webhooks = await openWebhookWork(config, { connection, queue, signer, log, resolve: deps.webhookResolver, metrics: deps.metrics });
  const trigger = rechargeTrigger(config, connection, queue);
  const credits = new CreditService({
    accounts: accountStore,
    audit: auditStore,
    host: deps.host ?? hostname(),
    metrics: deps.metrics,
    onBalanceChanged: (accountId, balance, state, recharge) => observeBalance({ webhooks, trigger, log }, accountId, balance, state, recharge),
    keyCredits: new MongoKeyCreditStore(connection),
    heldCredits: accountStore,
    onBackgroundError: (err) => log.warn({ err }, 'confirming a capped key\'s reservation failed (the key sweep settles it)'),
  });
  const imageJobs = await openImageWork(config, { connection, queue, signer, credits, webhooks, provider: deps.imageProvider, metrics: deps.metrics });
  const billing = await openBillingWork(config, { connection, credits, audit: auditStore, queue, webhooks, host: deps.host ?? hostname() });
  return {
    imageJobs,
    billing,
    async close() {
      await queue.close();
      // Reservations of charges already answered: confirmed before the connection goes.
      await credits.confirmed();
    },
  };
}

/** The process's one queue (one Agenda instance: a local enqueue wakes a local worker), named by its role. */
export function openImageQueue(config: Config, deps: { connection: Connection; role: string; log?: Logger }): Promise<ImageQueue> {
  const { connection } = deps;
  if (!connection.db) throw new Error('openImageQueue needs a connected database');
  return ImageQueue.open(connection.db, {
    name: `${deps.role}@${hostname()}:${process.pid}`,
    pollIntervalMs: config.QUEUE_POLL_INTERVAL_MS,
    lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS,
    concurrency: config.WORKER_CONCURRENCY,
    notifications: config.QUEUE_NOTIFICATIONS,
    log: deps.log,
    // readyState 1 = connected; the driver reports a lost server at once (broken sockets, heartbeats).
    databaseReachable: () => connection.readyState === 1,
    reconnected: (listener) => {
      connection.on('reconnected', listener);
      return () => void connection.off('reconnected', listener);
    },
  });
}

/** URL_SIGNING_SECRET, or the secret every instance shares in the database. */
export async function openImageUrlSigner(config: Config, connection: Connection): Promise<ImageUrlSigner> {
  const secret = config.URL_SIGNING_SECRET ?? (await loadOrCreateSigningSecret(connection));
  return new ImageUrlSigner(secret, config.IMAGE_URL_TTL_SECONDS);
}

export async function openWebhookWork(
  config: Config,
  deps: {
    connection: Connection;
    /** Deliveries ride on the process's queue (its Agenda instance). */
    queue: ImageQueue;
    signer: ImageUrlSigner;
    log: Logger;
    /** Tests inject a resolver (a name resolving to loopback) and may inject a transport. */
    resolve?: HostResolver;
    transport?: WebhookTransport;
    /** Told how each delivery attempt ended. */
    metrics?: DomainMetrics;
  },
): Promise<WebhookWork> {
  const { connection, log } = deps;
  if (!connection.db) throw new Error('openWebhookWork needs a connected database');
  const endpoints = new MongoEndpointStore(connection);
  const deliveries = new MongoDeliveryStore(connection);
  const outbox = new MongoJobEventOutbox(connection);
  const lowCredits = new MongoLowCreditsStore(connection);
  await Promise.all([endpoints.init(), deliveries.init(), outbox.init(), lowCredits.init()]);
  const queue = await WebhookQueue.open(deps.queue.agenda, connection.db);
  const resolve = deps.resolve ?? systemResolver;
  // Only jobs from before options need it (what they were drawn with): the configured provider's.
  const offer = createImageProvider(config).offer;
  const publisher = new WebhookPublisher({
    endpoints,
    deliveries,
    queue,
    outbox,
    lowCredits,
    jobView: (job, baseUrl) => toJobView(job, signedViewing({ signer: deps.signer, baseUrl, offer, retentionMs: imageRetention(config).retentionMs })),
    publicBaseUrl: config.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
  });
  return {
    publisher,
    alerts: new LowCreditsAlerts({ store: lowCredits, publisher, onBackgroundError: (err) => log.warn({ err }, 'webhooks: publishing credits.low failed') }),
    deliverer: new WebhookDeliverer({
      deliveries,
      endpoints,
      transport: deps.transport ?? httpTransport,
      resolve,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      scheduleMs: webhookRetrySchedule(config),
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      metrics: deps.metrics,
    }),
    sweeper: new WebhookSweeper({ outbox, lowCredits, deliveries, queue, publisher }),
    queue,
    stores: { endpoints, deliveries, lowCredits },
    resolve,
  };
}

/** The credit service's balance hook: the low-balance alert, whose failures are logged, never the charge's. */
export function observeLowCredits(alerts: LowCreditsAlerts, log: Logger, ...change: Parameters<LowCreditsAlerts['observe']>): Promise<void> | undefined {
  return alerts.observe(...change)?.catch((err: unknown) => log.warn({ err }, 'webhooks: credits.low check failed'));
}

/**
 * What every applied balance change is told to: the low-balance alert and the auto-recharge trigger
 * (each undefined when it has nothing to do, which costs the charge no promise).
 */
export function observeBalance(
  to: { webhooks: Pick<WebhookWork, 'alerts'>; trigger: RechargeTrigger; log: Logger },
  accountId: string,
  balance: number,
  state?: { threshold: number; armed: boolean },
  recharge?: RechargeState,
): Promise<void> | undefined {
  const alert = observeLowCredits(to.webhooks.alerts, to.log, accountId, balance, state);
  const claim = to.trigger.observe(accountId, balance, recharge)?.catch((err: unknown) => to.log.warn({ err }, 'billing: automatic recharge trigger failed'));
  if (!alert) return claim;
  if (!claim) return alert;
  return Promise.all([alert, claim]).then(() => undefined);
}

/** The request's part of automatic recharge: built before the credits, which tell it of every change. */
export function rechargeTrigger(config: Config, connection: Connection, queue: ImageQueue, now?: () => Date): RechargeTrigger {
  return new RechargeTrigger({
    accounts: new MongoBillingAccountStore(connection),
    queue: new AgendaRechargeQueue(queue.agenda),
    enabled: config.STRIPE_SECRET_KEY !== undefined,
    maxPerDay: config.AUTO_RECHARGE_MAX_PER_DAY,
    now,
  });
}

/** Stores, Stripe (when configured), the exactly-once fulfilment and the recharge runner, on the credits built with the trigger. */
export async function openBillingWork(
  config: Config,
  deps: {
    connection: Connection;
    credits: CreditService;
    audit: AuditStore;
    queue: ImageQueue;
    webhooks: Pick<WebhookWork, 'publisher'>;
    host: string;
    /** The billing clock (the UTC day of the recharge cap); default: the system's. */
    now?: () => Date;
  },
): Promise<BillingWork> {
  const purchases = new MongoPurchaseStore(deps.connection);
  await purchases.init();
  const accounts = new MongoBillingAccountStore(deps.connection);
  const catalog: Catalog = { packs: creditPacks(config), currency: config.CREDIT_CURRENCY };
  const client = config.STRIPE_SECRET_KEY ? stripeClient({ secretKey: config.STRIPE_SECRET_KEY, apiBase: config.STRIPE_API_BASE }) : null;
  const provider = client ? new StripePayments(client) : null;
  const fulfilment = new PurchaseFulfilment({
    purchases,
    accounts,
    credits: deps.credits,
    provider,
    catalog,
    host: deps.host,
  });
  return {
    catalog,
    fulfilment,
    service: new BillingService({
      accounts,
      accountOf: (id) => deps.credits.getAccount(id),
      purchases,
      audit: deps.audit,
      provider,
      catalog,
      maxRechargesPerDay: config.AUTO_RECHARGE_MAX_PER_DAY,
      now: deps.now,
    }),
    autoRecharge: new AutoRecharge({
      accounts,
      queue: new AgendaRechargeQueue(deps.queue.agenda),
      provider,
      fulfilment,
      catalog,
      audit: deps.audit,
      publishFailure: (accountId, event) => deps.webhooks.publisher.publishRechargeFailed(accountId, event),
      host: deps.host,
    }),
    verify: client && config.STRIPE_WEBHOOK_SECRET ? stripeEventVerifier(client, config.STRIPE_WEBHOOK_SECRET) : null,
  };
}

export async function openImageWork(
  config: Config,
  deps: {
    connection: Connection;
    queue: ImageQueue;
    signer: ImageUrlSigner;
    /** With settleReservation (a CreditService), the key sweep runs too. */
    credits: JobCredits & Partial<Pick<CreditService, 'settleReservation'>>;
    webhooks: WebhookWork;
    /** Defaults to the configured provider; tests pass their own. */
    provider?: ImageProvider;
    /** Told of jobs ending and images generated. */
    metrics?: DomainMetrics;
  },
): Promise<ImageWork> {
  const { connection, queue, credits, webhooks } = deps;
  if (!connection.db) throw new Error('openImageWork needs a connected database');
  const store = new MongoJobStore(connection);
  await store.init();
  const { store: images, presigned } = openImageStore(config, connection.db);
  const provider = deps.provider ?? createImageProvider(config);
  const settlement = new JobSettlement({
    jobs: store,
    credits,
    metrics: deps.metrics,
    // A publish that fails here is redone by the webhook sweep (the job keeps its eventPending flag).
    onEnded: (job) =>
      webhooks.publisher.publishJob(job.id).then(
        () => undefined,
        (err: unknown) => queue.errors.report(err, 'webhooks'),
      ),
  });
  const runner = new ImageRunner({
    jobs: store,
    credits,
    settlement,
    provider,
    images,
    lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS,
    maxAttempts: config.IMAGE_MAX_ATTEMPTS,
    metrics: deps.metrics,
    // A missed heartbeat is harmless while the next one lands in time; in an outage they all fail.
    log: (msg, extra) => queue.errors.report(extra?.err ?? new Error(msg), 'heartbeat'),
  });
  const sweeper = new JobSweeper({ jobs: store, credits, queue, runner, lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS });
  const keyStore = new MongoKeyStore(connection);
  await keyStore.init();
  const settle = credits.settleReservation?.bind(credits);
  const keys = settle
    ? new KeySweeper({
        credits: new MongoKeyCreditStore(connection),
        settle,
        expiry: keyStore,
        publish: (accountId, key) => webhooks.publisher.publishKeyExpiring(accountId, key),
      })
    : undefined;
  const retention = new ImageRetention({ jobs: store, images, retentionMs: imageRetention(config).retentionMs });
  return { queue, store, signer: deps.signer, images, presigned, provider, retention, settlement, runner, sweeper, keys, webhooks };
}
