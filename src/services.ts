/**
 * The gateway's composition root: builds every service the gateway process uses, once, from config +
 * deps. buildApp() hands each door only the interfaces it calls (REST routes, GraphQL, the console);
 * workers and the CLI have their own roots (workers/services.ts, src/cli/services.ts).
 *
 * How to plug in (other modules):
 *  - Add your service to the `Services` interface and build it in `buildServices`; close it in
 *    `close()` (reverse order of construction).
 *  - Never build a second key service: the key cache, revocation fan-out and lastUsedAt coalescing
 *    live in the instances built here.
 */
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import { imageRetention, type Config } from './config.js';
import { MongoAccountStore } from './data/accounts.js';
import { MongoAuditStore } from './data/audit.js';
import { databaseHealth, type HealthCheck } from './data/connection.js';
import { MongoSessionStore, MongoThrottleStore, MongoUserStore } from './data/console.js';
import { MongoTrustedDocumentStore } from './data/trusted-documents.js';
import { TrustedDocuments } from './domain/trusted-documents/service.js';
import { MongoClientTokenStore } from './data/client-tokens.js';
import { MongoDefinitionCacheStore } from './data/definition-cache.js';
import { MongoKeyChangeFeed } from './data/key-changes.js';
import { MongoIdempotencyStore } from './data/idempotency.js';
import { MongoKeyStore } from './data/keys.js';
import { MongoKeyCreditStore } from './data/key-credits.js';
import { MongoRateLimitCounter } from './data/rate-limits.js';
import { AuditLog } from './domain/audit/service.js';
import { withTokenBudgets } from './domain/client-tokens/budget.js';
import { ClientTokens } from './domain/client-tokens/service.js';
import { Idempotency } from './domain/idempotency/service.js';
import { SessionService } from './domain/console/sessions.js';
import { SignInService } from './domain/console/signin.js';
import { UserService } from './domain/console/users.js';
import { MemberSessions } from './domain/team/callers.js';
import { Invitations } from './domain/team/invitations.js';
import { TeamService } from './domain/team/members.js';
import { MongoTeamStore } from './data/team.js';
import { CreditService } from './domain/credits/service.js';
import { LayeredDefinitionCache } from './domain/definitions/cache.js';
import { DefinitionLookup } from './domain/definitions/service.js';
import type { DefinitionProvider } from './domain/definitions/types.js';
import { createKeyServices, type KeyManager } from './domain/keys/index.js';
import type { KeyVerifier } from './domain/keys/verifier.js';
import type { LastUsedRecorder } from './domain/keys/last-used.js';
import type { RateLimiter } from './domain/keys/rate-limit.js';
import { silentLogger, type Logger } from './domain/logger.js';
import type { CreditBalances, DefinitionService, KeyAuthenticator } from './domain/ports.js';
import { createDefinitionProvider } from './providers/definitions/index.js';
import type { ImageProvider } from './providers/images/types.js';
import { argon2Hasher } from './providers/passwords/argon2.js';
import type { PasswordHasher } from './domain/console/passwords.js';
import { MongoJobEvents, type JobEvents } from './queue/job-events.js';
import type { ImageJobService, JobWatch } from './domain/ports.js';
import { ImageFiles } from './domain/jobs/files.js';
import { ImageJobs } from './domain/jobs/service.js';
import { JobWatcher } from './domain/jobs/watch.js';
import { MongoUsageStore } from './data/usage.js';
import { WebhookEndpoints } from './domain/webhooks/endpoints.js';
import type { HostResolver } from './domain/webhooks/ports.js';
import type { DomainMetrics } from './domain/metrics.js';
import { UsageService } from './domain/usage/service.js';
import { observeBalance, openBillingWork, openImageQueue, openImageUrlSigner, openImageWork, openWebhookWork, rechargeTrigger, type BillingWork, type ImageWork } from '../workers/services.js';
import { MongoEmailThrottleStore } from './data/email-throttle.js';
import { MongoLinkTokenStore } from './data/link-tokens.js';
import { MongoEmailOutboxStore } from './data/email-outbox.js';
import { MongoSignupClaimStore } from './data/signup-claims.js';
import type { EmailSender } from './domain/email/ports.js';
import { EmailOutbox } from './domain/email/outbox.js';
import { EmailThrottle } from './domain/email/throttle.js';
import { LinkTokens } from './domain/links/service.js';
import { createEmailSender } from './providers/email/index.js';
import { MongoCredentialStore } from './data/credentials.js';
import { PasswordService, RESET_EMAIL, sendResetEmail } from './domain/identity/password-reset.js';
import { SignUpService } from './domain/identity/signup.js';
import { TwoFactorService } from './domain/identity/two-factor.js';

export interface ConsoleServices {
  readonly users: UserService;
  readonly sessions: SessionService;
  readonly signIn: SignInService;
  /** Members, roles, the last-owner rule and the two-factor requirement of an account. */
  readonly team: TeamService;
  /** Every console request's session and the caller's role in its current account (the edge asks it). */
  readonly callers: MemberSessions;
  /** Invitation links: send, list, revoke, accept. */
  readonly invitations: Invitations;
  readonly signUp: SignUpService;
  readonly passwords: PasswordService;
  /** TOTP second factor; `isEnabled(userId)` tells whether a user has it. */
  readonly twoFactor: TwoFactorService;
}

export interface Services {
  readonly config: Config;
  readonly connection: Connection;
  /** Accounts and balances: charge / refund / grant / voidOp, idempotent by operation id. */
  readonly credits: CreditService;
  /** Batched balances (GraphQL DataLoader); the same object as `credits`. */
  readonly balances: CreditBalances;
  /** Every API request's key check: 401s, rate limit, last use (REST and GraphQL). */
  readonly authenticator: KeyAuthenticator;
  /** The per-key rate limit shared by every instance: `take(keyId, cost)` (GraphQL charges per field). */
  readonly rateLimiter: RateLimiter;
  /** Create, list, delete keys (console and CLI only). */
  readonly keys: KeyManager;
  readonly keyVerifier: KeyVerifier;
  readonly lastUsed: LastUsedRecorder;
  readonly definitions: DefinitionLookup;
  readonly audit: AuditLog;
  /** Usage per account, key (or console), service and day: the console and the CLI read it. */
  readonly usage: UsageService;
  /** Key change feed state: 'changestream' (keys cached) or 'poll' (no key cache). */
  readonly keyFeedState: () => 'changestream' | 'poll' | 'stopped';
  /** Image jobs: create, get, list (REST, GraphQL, console). */
  readonly jobs: ImageJobService;
  /** Stored images behind signed URLs. */
  readonly imageFiles: ImageFiles;
  /** The queue, runner, sweeps and deliveries, for the in-process worker (IN_PROCESS_WORKER). */
  readonly imageJobs: ImageWork;
  /** Cross-process job changes, the source of `jobWatch`. */
  readonly jobEvents: JobEvents;
  /** A job's changes as its owner may see them (GraphQL `jobStatus`, the console's live playground). */
  readonly jobWatch: JobWatch;
  /** Readiness: does the database answer? */
  readonly health: HealthCheck;
  readonly console: ConsoleServices;
  /** Client tokens for browser apps: minted by an API key, checked by the /graphql edge. */
  readonly clientTokens: ClientTokens;
  /** The operations an account registered for its `trustedDocumentsOnly` client tokens. */
  readonly trustedDocuments: TrustedDocuments;
  /** `definitions` and `jobs` as the API doors call them: a client token's credit budget applies. */
  readonly budgeted: { readonly definitions: DefinitionService; readonly jobs: ImageJobService };
  /** Idempotency keys of the charging operations (REST Idempotency-Key, GraphQL idempotencyKey). */
  readonly idempotency: Idempotency;
  /** Webhook endpoints and deliveries (REST and the console). */
  readonly webhooks: WebhookEndpoints;
  /** Buying credits: the Billing page, Stripe's webhook, automatic recharge. */
  readonly billing: BillingWork;
  /** Outgoing email (SMTP, or the log without SMTP_URL) and its per-address and per-IP throttle. */
  readonly email: { readonly sender: EmailSender; readonly throttle: EmailThrottle };
  /** Single-use tokens of emailed links: verification, password reset, invitations. */
  readonly links: LinkTokens;
  /** Stops background work (change feeds, lastUsedAt flush). Does not close the connection (the caller owns it). */
  close(): Promise<void>;
}

export interface ServiceDeps {
  connection: Connection;
  logger?: Logger;
  /** Replaces the configured definition provider (tests). */
  definitionProvider?: DefinitionProvider;
  /** How keys hear of changes: change streams where available (default) or polling only. */
  keyChanges?: 'auto' | 'changestream' | 'poll';
  /** Host name recorded in audit entries; default os.hostname(). */
  host?: string;
  /** Replaces the configured image provider (tests, benchmarks). */
  imageProvider?: ImageProvider;
  /** Replaces DNS for webhook URLs (tests). */
  webhookResolver?: HostResolver;
  /** Replaces argon2id (tests that create many users). */
  passwordHasher?: PasswordHasher;
  /** Names this process in the work queue; default `gateway`. */
  role?: string;
  /** The rate limit's clock in ms (tests move it instead of sleeping); default Date.now. */
  rateLimitNow?: () => number;
  /** The billing clock: the UTC day automatic recharges are counted on (tests move it instead of waiting for midnight). */
  billingNow?: () => Date;
  /** How long a running Idempotency-Key request holds its key (tests shorten it); default 60 s. */
  idempotencyLockMs?: number;
  /** Told where the domain decides (charges, refunds, jobs, images, deliveries); default: nothing counted. */
  metrics?: DomainMetrics;
  /** Where emails go without SMTP_URL (development); default: the logger. */
  emailLog?: (text: string) => void;
  /** The email outbox's claim (default 60 s) and sweep interval (default 15 s); tests shorten them. */
  emailOutbox?: { leaseMs?: number; sweepEveryMs?: number };
}

export async function buildServices(config: Config, deps: ServiceDeps): Promise<Services> {
  const { connection } = deps;
  const log = deps.logger ?? silentLogger;
  const host = deps.host ?? hostname();
  if (!connection.db) throw new Error('buildServices needs an open connection');

  const accountStore = new MongoAccountStore(connection);
  const keyStore = new MongoKeyStore(connection);
  const auditStore = new MongoAuditStore(connection);
  const cacheStore = new MongoDefinitionCacheStore(connection);
  const userStore = new MongoUserStore(connection);
  const sessionStore = new MongoSessionStore(connection);
  const throttleStore = new MongoThrottleStore(connection);
  const idempotencyStore = new MongoIdempotencyStore(connection);
  const tokenStore = new MongoClientTokenStore(connection);
  const rateLimits = new MongoRateLimitCounter(connection);
  const usageStore = new MongoUsageStore(connection);
  const linkStore = new MongoLinkTokenStore(connection);
  const emailThrottleStore = new MongoEmailThrottleStore(connection);
  const outboxStore = new MongoEmailOutboxStore(connection);
  const signupClaimStore = new MongoSignupClaimStore(connection);
  const documentStore = new MongoTrustedDocumentStore(connection);
  await Promise.all(
    [accountStore, keyStore, auditStore, cacheStore, userStore, sessionStore, throttleStore, idempotencyStore, tokenStore, rateLimits, usageStore, linkStore, emailThrottleStore, outboxStore, signupClaimStore, documentStore].map(
      (store) => store.init(),
    ),
  );
  const emailSender = createEmailSender(config, deps.emailLog ?? ((text) => log.info({}, text)));

  const keyFeed = new MongoKeyChangeFeed(connection.db, { mode: deps.keyChanges ?? 'auto', log });
  await keyFeed.start();

  // The queue and the webhooks first: the credits tell the low-balance alert of every balance change,
  // and image jobs are settled with those credits (workers/services.ts wires the same for a worker).
  const queue = await openImageQueue(config, { connection, role: deps.role ?? 'gateway', log });
  const signer = await openImageUrlSigner(config, connection);
  const webhooks = await openWebhookWork(config, { connection, queue, signer, log, resolve: deps.webhookResolver, metrics: deps.metrics });
  const trigger = rechargeTrigger(config, connection, queue, deps.billingNow);
  const credits = new CreditService({
    accounts: accountStore,
    audit: auditStore,
    host,
    metrics: deps.metrics,
    onBalanceChanged: (accountId, balance, state, recharge) => observeBalance({ webhooks, trigger, log }, accountId, balance, state, recharge),
    keyCredits: new MongoKeyCreditStore(connection),
    heldCredits: accountStore,
    onBackgroundError: (err) => log.warn({ err }, 'confirming a capped key\'s reservation failed (the key sweep settles it)'),
  });
  const keys = createKeyServices({
    keys: keyStore,
    accounts: accountStore,
    audit: auditStore,
    changes: keyFeed,
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    rateLimits,
    rateLimitNow: deps.rateLimitNow,
    onRateLimited: deps.metrics && (() => deps.metrics!.rateLimited()),
    onBackgroundError: (err) => log.warn({ err }, 'keys: background write failed'),
  });
  const provider = deps.definitionProvider ?? (await createDefinitionProvider(config));
  const definitions = new DefinitionLookup({
    credits,
    provider,
    cache: new LayeredDefinitionCache({ ttlMs: config.DEFINITION_CACHE_TTL_SECONDS * 1000, maxEntries: 10_000, store: cacheStore }),
    maxKeywordLength: config.MAX_KEYWORD_LENGTH,
    onCacheError: (err) => log.warn({ err }, 'definitions: cache failed'),
  });
  const audit = new AuditLog({ store: auditStore, accounts: accountStore });
  // Usage metering's reader (the counting happens in every charge's balance update).
  const usage = new UsageService({ store: usageStore });
  const stopRollUps = usage.startRollUps({ everyMs: 3_600_000, onError: (err) => log.warn({ err }, 'usage: roll-up failed') });

  const imageJobs = await openImageWork(config, { connection, queue, signer, credits, webhooks, provider: deps.imageProvider, metrics: deps.metrics });
  const jobs = new ImageJobs({
    jobs: imageJobs.store,
    credits,
    settlement: imageJobs.settlement,
    queue,
    signer,
    limits: { maxPrompts: config.MAX_PROMPTS, maxPromptLength: config.MAX_PROMPT_LENGTH },
    offer: imageJobs.provider.offer,
    retentionMs: imageRetention(config).retentionMs,
    presigned: imageJobs.presigned,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    onBackgroundError: (err) => queue.errors.report(err, 'enqueue'),
  });
  const billing = await openBillingWork(config, { connection, credits, audit: auditStore, queue, webhooks, host, now: deps.billingNow });
  // Started lazily by the first subscriber: a gateway that no one subscribes to opens no stream.
  const jobEvents = new MongoJobEvents({ db: connection.db, mode: config.JOB_EVENTS, pollMs: config.JOB_EVENTS_POLL_MS, log });

  const hasher = deps.passwordHasher ?? argon2Hasher;
  const sessions = new SessionService({
    sessions: sessionStore,
    limits: { idleMs: config.CONSOLE_SESSION_IDLE_MINUTES * 60_000, absoluteMs: config.CONSOLE_SESSION_MAX_HOURS * 3_600_000 },
  });
  const emailThrottle = new EmailThrottle({ store: emailThrottleStore });
  const links = new LinkTokens({ store: linkStore });
  const teamStore = new MongoTeamStore(connection);
  const team = new TeamService({ memberships: teamStore, accounts: teamStore, endSessions: (userId, accountId) => sessions.endForMember(userId, accountId), audit: auditStore });
  const users = new UserService({ users: userStore, sessions: sessionStore, accounts: accountStore, hasher, audit: auditStore, owners: team });
  const credentialStore = new MongoCredentialStore(connection);
  const mailing = { links, mail: emailSender, throttle: emailThrottle, hasher, audit: auditStore, host };
  // Emails sent after the answer (forgot-password): the answer's time tells nothing of the mail server.
  const emailOutbox = new EmailOutbox({
    store: outboxStore,
    handlers: { [RESET_EMAIL]: sendResetEmail({ users: userStore, links, mail: emailSender }) },
    claimMs: deps.emailOutbox?.leaseMs,
    onError: (err, entry, givenUp) => log.warn({ err, kind: entry.kind, attempts: entry.attempts }, givenUp ? 'email outbox: gave up sending' : 'email outbox: sending failed (tried again later)'),
  });
  const stopOutbox = emailOutbox.start({ everyMs: deps.emailOutbox?.sweepEveryMs ?? 15_000, onError: (err) => log.warn({ err }, 'email outbox: sweep failed') });
  const twoFactor = new TwoFactorService({ users: userStore, credentials: credentialStore, hasher, audit: auditStore, host });
  const signIn = new SignInService({ users: userStore, hasher, sessions, throttle: throttleStore, audit: auditStore, host, secondFactor: { check: twoFactor, challenges: links } });
  const consoleServices: ConsoleServices = {
    users,
    sessions,
    signIn,
    signUp: new SignUpService({ ...mailing, users: userStore, userService: users, credits, claims: signupClaimStore, sessions, passwordChecks: signIn, signupCredits: config.SIGNUP_CREDITS }),
    passwords: new PasswordService({ ...mailing, outbox: emailOutbox, users: userStore, credentials: credentialStore, sessions: sessionStore }),
    twoFactor,
    team,
    callers: new MemberSessions({ sessions, memberships: teamStore, accounts: teamStore }),
    invitations: new Invitations({
      links,
      sender: emailSender,
      throttle: emailThrottle,
      team,
      memberships: teamStore,
      accounts: teamStore,
      users: userStore,
      hasher,
      audit: auditStore,
    }),
  };

  const clientTokens = new ClientTokens({
    store: tokenStore,
    audit: auditStore,
    liveKey: (keyId) => keys.verifier.liveKey(keyId),
    // A console token's member: still in the account, and the session it was minted in still alive.
    liveMember: async (accountId, userId, sessionId) => {
      const [member, session] = await Promise.all([teamStore.member(accountId, userId), sessionId ? sessionStore.find(sessionId) : null]);
      if (!member) return null;
      if (sessionId && (!session || session.userId !== userId || session.expiresAt.getTime() <= Date.now())) return null;
      return member.role;
    },
  });
  const budgeted = withTokenBudgets({ definitions, jobs }, tokenStore, {
    maxKeywordLength: config.MAX_KEYWORD_LENGTH,
    maxPrompts: config.MAX_PROMPTS,
    maxPromptLength: config.MAX_PROMPT_LENGTH,
  });

  return {
    config,
    connection,
    clientTokens,
    trustedDocuments: new TrustedDocuments({ store: documentStore }),
    budgeted,
    credits,
    balances: credits,
    authenticator: keys.authenticator,
    rateLimiter: keys.limiter,
    keys: keys.manager,
    keyVerifier: keys.verifier,
    lastUsed: keys.lastUsed,
    definitions,
    audit,
    usage,
    keyFeedState: () => keyFeed.state,
    jobs,
    imageFiles: new ImageFiles({ jobs: imageJobs.store, images: imageJobs.images, signer, retentionMs: imageRetention(config).retentionMs }),
    imageJobs,
    jobEvents,
    jobWatch: new JobWatcher({ jobs, changes: jobEvents }),
    health: databaseHealth(connection),
    console: consoleServices,
    idempotency: new Idempotency({ store: idempotencyStore, lockMs: deps.idempotencyLockMs ?? config.IDEMPOTENCY_LOCK_MS }),
    webhooks: new WebhookEndpoints({
      ...webhooks.stores,
      queue: webhooks.queue,
      resolve: webhooks.resolve,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
    }),
    billing,
    email: { sender: emailSender, throttle: emailThrottle },
    links,
    async close() {
      stopRollUps();
      // The mail server's connections first: a send it holds fails at once, and stays in the outbox.
      emailSender.close?.();
      await stopOutbox();
      // IMAGE JOBS / JOB EVENTS: close them here, before the key feed.
      await jobEvents.close();
      await queue.close();
      // Reservations of charges already answered: confirmed before the connection goes.
      await credits.confirmed();
      await keys.close();
      await keyFeed.close();
      await closeProvider(provider);
    },
  };
}

async function closeProvider(provider: DefinitionProvider): Promise<void> {
  const closable = provider as DefinitionProvider & { close?: () => Promise<void> };
  await closable.close?.();
}
