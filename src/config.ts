import { isIP } from 'node:net';
import { z } from 'zod';
import { IMAGE_FORMATS } from './domain/jobs/options.js';
import { DEFAULT_RETRY_SCHEDULE, parseSchedule } from './domain/webhooks/schedule.js';

/**
 * The only module that reads process.env. Parsed once, validated, frozen; everything else receives a
 * Config object (tests build their own with loadConfig({...})).
 */
const bool = (dflt: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? dflt : v === 'true' || v === '1' || v === 'yes'));

const int = (dflt: number, min = 0, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(dflt);

/** A comma-separated list of `item`s; unset or empty: undefined. */
const list = <T extends string>(item: z.ZodType<T, string>) =>
  z
    .string()
    .optional()
    .transform((s) => s?.split(',').map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(item).min(1).optional());

/** A duration such as `90s`, `5m`, `1h`, `30d` (ms, s, m, h, d), at least `minMs`; read with durationMs. */
const duration = (dflt: string, minMs: number) =>
  z
    .string()
    .default(dflt)
    .refine((s) => (durationMs(s) ?? 0) >= minMs, `must be one duration of at least ${minMs / 1000}s, such as 90s, 1h or 30d (units ms, s, m, h, d)`);

/** `30d` → milliseconds; undefined unless it is one duration. */
export function durationMs(text: string): number | undefined {
  const ms = parseSchedule(text.trim());
  return ms?.length === 1 ? ms[0] : undefined;
}

const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** One trusted proxy: an IP address, a CIDR range, or one of proxy-addr's names (`loopback`, …). */
function isProxyAddress(entry: string): boolean {
  if (TRUST_PROXY_NAMES.has(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/**
 * Fastify's trustProxy, without `true`: trusting every hop would let a client pick its own address
 * (the left-most X-Forwarded-For is whatever it wrote). false, a hop count, or the proxies' addresses.
 */
const trustProxy = z
  .string()
  .optional()
  .transform((v, ctx): false | number | string[] => {
    const value = (v ?? 'false').trim().toLowerCase();
    if (value === 'false' || value === '0') return false;
    if (/^\d{1,2}$/.test(value)) return Number(value);
    if (value === 'true') {
      ctx.addIssue({
        code: 'custom',
        message:
          'true would trust every hop, so a client could choose its own address (the left-most X-Forwarded-For); set the number of proxies in front of the gateway (TRUST_PROXY=1 behind one load balancer) or their addresses (TRUST_PROXY=10.0.0.0/8,127.0.0.1)',
      });
      return z.NEVER;
    }
    const entries = value.split(',').map((e) => e.trim());
    const wrong = entries.filter((e) => !isProxyAddress(e));
    if (wrong.length > 0) {
      ctx.addIssue({ code: 'custom', message: `must be false, a hop count, or IP addresses/CIDR ranges, comma-separated (not ${wrong.map((w) => JSON.stringify(w)).join(', ')})` });
      return z.NEVER;
    }
    return entries;
  });

const url = z.url().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: int(4000, 0, 65535),
    HOST: z.string().min(1).default('0.0.0.0'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /**
     * OpenTelemetry: set, traces go out over OTLP/HTTP (the SDK reads this and the other OTEL_*
     * variables itself); unset, tracing is off and its SDK is never loaded (src/tracing/).
     */
    OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
    /** Unset: `credit-gateway` or `credit-gateway-worker`, by process. */
    OTEL_SERVICE_NAME: z.string().min(1).optional(),
    /** Unset: an embedded MongoDB-compatible server is started (development and tests only). */
    MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must start with mongodb:// or mongodb+srv://').optional(),
    /** Where the embedded database keeps its files when MONGODB_URI is unset. */
    DATA_DIR: z.string().min(1).default('./data'),
    /** Which routes this deployment exposes: images, definitions, or both (comma-separated). */
    SERVICES: z
      .string()
      .default('images,definitions')
      .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
      .pipe(z.array(z.enum(['images', 'definitions'])).min(1)),
    /** Public base address used in signed image URLs; unset: derived from the request's Host. */
    PUBLIC_BASE_URL: url.optional(),
    /** Host names (optionally host:port) clients may call the gateway by, comma-separated; unset: any. */
    ALLOWED_HOSTS: z
      .string()
      .optional()
      .transform((s) => s?.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean))
      .pipe(z.array(z.string().regex(/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/, 'must be host names, optionally with :port')).min(1).optional()),
    /** HMAC secret for signed image URLs. Unset: generated once and stored in the database. */
    URL_SIGNING_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    IMAGE_URL_TTL_SECONDS: int(6 * 3600, 3600),

    MAX_PROMPTS: int(50, 1, 10_000),
    MAX_PROMPT_LENGTH: int(2000, 1),
    MAX_KEYWORD_LENGTH: int(100, 1),
    BODY_LIMIT_BYTES: int(1024 * 1024, 1024),
    /** Requests per minute per API key; 0 disables rate limiting. */
    RATE_LIMIT_PER_MINUTE: int(0),

    DEFINITION_PROVIDER: z.enum(['wordnet', 'openai']).default('wordnet'),
    DEFINITION_API_URL: url.optional(),
    DEFINITION_API_KEY: z.string().optional(),
    DEFINITION_MODEL: z.string().default('gpt-4o-mini'),
    DEFINITION_TIMEOUT_MS: int(15_000, 100),
    DEFINITION_RETRIES: int(2, 0, 10),
    DEFINITION_CACHE_TTL_SECONDS: int(24 * 3600, 0),

    IMAGE_PROVIDER: z.enum(['builtin', 'openai']).default('builtin'),
    IMAGE_API_URL: url.optional(),
    IMAGE_API_KEY: z.string().optional(),
    IMAGE_MODEL: z.string().default('dall-e-3'),
    IMAGE_SIZE: z.string().regex(/^\d+x\d+$/, 'must be WIDTHxHEIGHT').default('1024x1024'),
    /** IMAGE_PROVIDER=openai: the sizes its model takes, comma-separated; unset: IMAGE_SIZE only. */
    IMAGE_SIZES: list(z.string().regex(/^[1-9]\d{0,4}x[1-9]\d{0,4}$/, 'must be WIDTHxHEIGHT sizes, comma-separated')),
    /** IMAGE_PROVIDER=openai: the formats its model takes as output_format (png, webp, jpeg); unset: png. */
    IMAGE_FORMATS: list(z.enum(IMAGE_FORMATS, { error: `must be formats among ${IMAGE_FORMATS.join(', ')}, comma-separated` })),
    /** IMAGE_PROVIDER=openai: the endpoint takes `seed` (OpenAI's own does not). */
    IMAGE_SEED: bool(false),
    /** IMAGE_PROVIDER=openai: the endpoint takes `negative_prompt` (OpenAI's own does not). */
    IMAGE_NEGATIVE_PROMPT: bool(false),
    IMAGE_TIMEOUT_MS: int(60_000, 100),
    IMAGE_RETRIES: int(2, 0, 10),

    /** Where image bytes live: fs (IMAGE_DIR), gridfs (MongoDB) or s3. Unset: fs with the embedded database, gridfs with MONGODB_URI. */
    IMAGE_STORE: z.enum(['fs', 'gridfs', 's3']).optional(),
    /** IMAGE_STORE=fs: the directory (shared by every gateway and worker); unset: DATA_DIR/images. */
    IMAGE_DIR: z.string().min(1).optional(),
    /** IMAGE_STORE=s3: the bucket (it must exist). */
    S3_BUCKET: z.string().min(1).optional(),
    S3_REGION: z.string().min(1).default('us-east-1'),
    /** An S3-compatible store's address (MinIO, R2, …); unset: AWS. */
    S3_ENDPOINT: url.optional(),
    /** Bucket in the path (`endpoint/bucket/key`) rather than the host name: what most S3-compatible stores need. */
    S3_FORCE_PATH_STYLE: bool(false),
    /** Credentials for the bucket; unset: the AWS SDK's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profiles, roles). */
    S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    /** Key prefix of the images in the bucket. */
    S3_PREFIX: z.string().default('images/'),
    /**
     * The SDK's request checksums and response validation: when_supported (the SDK's default, for AWS) or
     * when_required (for S3-compatible stores that keep aws-chunked uploads verbatim). Unset: when_required
     * with S3_ENDPOINT, when_supported without.
     */
    S3_CHECKSUMS: z.enum(['when_supported', 'when_required']).optional(),
    /** proxy: image URLs are the gateway's signed URLs; presigned (IMAGE_STORE=s3): the store's presigned GET URLs. */
    IMAGE_URL_MODE: z.enum(['proxy', 'presigned']).default('proxy'),
    /** How long image bytes are kept after they are made: a duration (90s, 1h, 30d). */
    IMAGE_RETENTION: duration('30d', 1000),
    /** How often the workers delete expired images. */
    IMAGE_SWEEP_INTERVAL: duration('1m', 1000),

    IN_PROCESS_WORKER: bool(true),
    WORKER_CONCURRENCY: int(16, 1, 1000),
    JOB_LOCK_LIFETIME_MS: int(60_000, 1000),
    /** How often the sweep requeues jobs whose queue entry vanished and settles pending refunds. */
    JOB_SWEEP_INTERVAL_MS: int(30_000, 1000),
    /** Claims of one image (worker crashes included) before it fails and is refunded. */
    IMAGE_MAX_ATTEMPTS: int(3, 1, 20),
    /** Workers' backstop poll of the queue; enqueues normally wake them at once (change streams). */
    QUEUE_POLL_INTERVAL_MS: int(200, 10),
    /** How workers hear of new queue entries from other processes: auto = change streams where available. */
    QUEUE_NOTIFICATIONS: z.enum(['auto', 'changestream', 'poll']).default('auto'),

    /** auto: change streams where the deployment has them, polling otherwise. */
    JOB_EVENTS: z.enum(['auto', 'changestream', 'poll']).default('auto'),
    JOB_EVENTS_POLL_MS: int(500, 50),

    /** Longest time to receive a whole request (headers and body); 408 after it. */
    /** How long a request holds its Idempotency-Key before a retry may take it over (a request that died). */
    IDEMPOTENCY_LOCK_MS: int(60_000, 1000),
    REQUEST_TIMEOUT_MS: int(30_000, 10),
    /** Longest time to receive a request's headers (slow-header clients); at most REQUEST_TIMEOUT_MS. */
    HEADERS_TIMEOUT_MS: int(10_000, 10),
    /** SIGTERM: how long requests in flight, running images and closing the database may take in all. */
    SHUTDOWN_TIMEOUT_MS: int(25_000, 1000),

    /** Behind reverse proxies: how many, or their addresses (then X-Forwarded-For/-Proto are read). */
    TRUST_PROXY: trustProxy,
    CONSOLE_SESSION_IDLE_MINUTES: int(30, 1, 24 * 60),
    /** open: anyone may create an account at /console/sign-up; invite: new people only through an invitation. */
    SIGNUP: z.enum(['open', 'invite']).default('open'),
    /**
     * Credits a new self-serve account starts with (audited as a grant). Unset: 100, so that someone who
     * signs up on a local run can try both services; 0 with NODE_ENV=production (loadConfig).
     */
    SIGNUP_CREDITS: int(100),
    /** Where email goes: smtp:// or smtps://, credentials in the URL. Unset: emails are written to the log (not in production). */
    SMTP_URL: z
      .url()
      .refine((u) => /^smtps?:\/\//.test(u), 'must be an smtp:// or smtps:// URL')
      .optional(),
    /** The From of every email, e.g. `Acme <no-reply@acme.example>`. */
    EMAIL_FROM: z.string().max(320).default('credit-gateway <no-reply@localhost>'),
    CONSOLE_SESSION_MAX_HOURS: int(12, 1, 24 * 30),
    /** The console warns when the balance is below this. */
    LOW_BALANCE_THRESHOLD: int(10, 0),

    /** Delays before each webhook retry after a failed attempt (Standard Webhooks' schedule by default). */
    WEBHOOK_RETRY_SCHEDULE: z
      .string()
      .default(DEFAULT_RETRY_SCHEDULE)
      .refine((s) => parseSchedule(s) !== null, 'must be a comma-separated list of durations such as 5s,5m,2h (units ms, s, m, h, d)'),
    /** Lets webhooks go to loopback, private and link-local addresses: development and tests only. */
    WEBHOOK_ALLOW_PRIVATE_URLS: bool(false),

    /** Stripe's secret API key (`sk_…`); unset: the Billing page shows balance and history only. */
    STRIPE_SECRET_KEY: z.string().min(1).optional(),
    /** The signing secret of the Stripe webhook endpoint (`whsec_…`) that posts to /api/stripe/webhook. */
    STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
    /** Another address for Stripe's API (tests: the stand-in); Stripe's own when unset. */
    STRIPE_API_BASE: url.optional(),
    /** Credit packs on sale: `credits:price` pairs, the price in the currency's minor unit (cents). */
    CREDIT_PACKS: z
      .string()
      .default('100:500,1000:4000')
      .refine((s) => parseCreditPacks(s) !== null, 'must be comma-separated credits:price pairs of positive integers (each pack size once), e.g. 100:500,1000:4000'),
    /** ISO currency of the packs' prices, lower case (Stripe's spelling). */
    CREDIT_CURRENCY: z
      .string()
      .default('usd')
      .transform((s) => s.toLowerCase())
      .pipe(z.string().regex(/^[a-z]{3}$/, 'must be a three-letter ISO currency code')),
    /** Automatic recharges per account and UTC day, at most. */
    AUTO_RECHARGE_MAX_PER_DAY: int(3, 0, 100),
    /** Prometheus metrics (`GET /metrics`) on this port of HOST, gateway and worker alike; unset: none. */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),

    GRAPHQL_INTROSPECTION: bool(true),
    GRAPHQL_MAX_DEPTH: int(8, 1),
    GRAPHQL_MAX_ALIASES: int(15, 0),
    GRAPHQL_MAX_COST: int(5000, 1),
    GRAPHQL_MAX_TOKENS: int(2000, 1),
    /** Open subscriptions on one WebSocket, and for one API key on this gateway instance. */
    GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET: int(100, 1),
    GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY: int(1000, 1),
  })
  .superRefine((c, ctx) => {
    if (c.DEFINITION_PROVIDER === 'openai' && !c.DEFINITION_API_URL) {
      ctx.addIssue({ code: 'custom', path: ['DEFINITION_API_URL'], message: 'is required when DEFINITION_PROVIDER=openai' });
    }
    if (c.IMAGE_PROVIDER === 'openai' && !c.IMAGE_API_URL) {
      ctx.addIssue({ code: 'custom', path: ['IMAGE_API_URL'], message: 'is required when IMAGE_PROVIDER=openai' });
    }
    if (c.IMAGE_STORE === 's3' && !c.S3_BUCKET) {
      ctx.addIssue({ code: 'custom', path: ['S3_BUCKET'], message: 'is required when IMAGE_STORE=s3' });
    }
    if (Boolean(c.S3_ACCESS_KEY_ID) !== Boolean(c.S3_SECRET_ACCESS_KEY)) {
      ctx.addIssue({ code: 'custom', path: ['S3_SECRET_ACCESS_KEY'], message: 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are set together, or neither' });
    }
    if (c.IMAGE_URL_MODE === 'presigned' && c.IMAGE_STORE !== 's3') {
      ctx.addIssue({ code: 'custom', path: ['IMAGE_URL_MODE'], message: 'presigned needs IMAGE_STORE=s3 (only an object store can presign its URLs)' });
    }
    if (c.METRICS_PORT !== undefined && c.METRICS_PORT !== 0 && c.METRICS_PORT === c.PORT) {
      ctx.addIssue({ code: 'custom', path: ['METRICS_PORT'], message: 'must differ from PORT (metrics are never served on the API port)' });
    }
    if (c.HEADERS_TIMEOUT_MS > c.REQUEST_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['HEADERS_TIMEOUT_MS'], message: 'must not exceed REQUEST_TIMEOUT_MS' });
    }
  });

export type Config = Readonly<z.output<typeof schema>>;
export type ConfigInput = Partial<Record<keyof z.input<typeof schema>, string | undefined>>;

/** Every variable the gateway reads (docs/configuration.md's table lists exactly these). */
export const CONFIG_KEYS = Object.keys(schema.shape) as (keyof z.input<typeof schema>)[];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses a set of variables (process.env by default) into a frozen Config, or throws ConfigError listing every problem. */
export function loadConfig(env: ConfigInput | NodeJS.ProcessEnv = process.env): Config {
  const picked: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape ?? {})) picked[key] = emptyToUndefined(env[key as keyof typeof env]);
  // The one default that depends on another variable: production gives nothing away unless told to.
  if (picked.SIGNUP_CREDITS === undefined && picked.NODE_ENV === 'production') picked.SIGNUP_CREDITS = '0';
  const parsed = schema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(config)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(parsed.data);
}

/**
 * What only the gateway process needs (workers and the CLI build no URLs, serve no HTTP and already
 * require MONGODB_URI): in production, image URLs must not take their base from whatever Host header a
 * client sends, and the database is a real one (the embedded server is a development dependency).
 */
export function checkGatewayConfig(config: Config): void {
  if (config.NODE_ENV !== 'production') return;
  const problems: string[] = [];
  if (!config.PUBLIC_BASE_URL && !config.ALLOWED_HOSTS) {
    problems.push(
      'PUBLIC_BASE_URL: is required when NODE_ENV=production, unless ALLOWED_HOSTS lists the host names clients use (image URLs would take any Host header as their base)',
    );
  }
  if (!config.MONGODB_URI) {
    problems.push('MONGODB_URI: is required when NODE_ENV=production (the embedded database is for development and tests only; use a MongoDB replica set)');
  }
  if (!config.SMTP_URL) {
    problems.push(
      'SMTP_URL: is required when NODE_ENV=production (sign-up, password reset and invitation emails go out through it; only outside production are they written to the log instead)',
    );
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
}

/** IMAGE_RETENTION and IMAGE_SWEEP_INTERVAL in milliseconds (validated when the config was loaded). */
export function imageRetention(config: Pick<Config, 'IMAGE_RETENTION' | 'IMAGE_SWEEP_INTERVAL'>): { retentionMs: number; sweepMs: number } {
  return { retentionMs: durationMs(config.IMAGE_RETENTION)!, sweepMs: durationMs(config.IMAGE_SWEEP_INTERVAL)! };
}

/** IMAGE_STORE, or its default: fs with the embedded database, gridfs with MONGODB_URI (as before). */
export function imageStoreKind(config: Pick<Config, 'IMAGE_STORE' | 'MONGODB_URI'>): 'fs' | 'gridfs' | 's3' {
  return config.IMAGE_STORE ?? (config.MONGODB_URI ? 'gridfs' : 'fs');
}

/** `100:500,1000:4000` → packs in the order given; null when malformed (or a pack size repeats). */
export function parseCreditPacks(text: string): { credits: number; price: number }[] | null {
  const packs = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => /^(\d{1,9}):(\d{1,9})$/.exec(p))
    .map((m) => (m ? { credits: Number(m[1]), price: Number(m[2]) } : null));
  if (packs.length === 0 || packs.some((p) => !p || p.credits <= 0 || p.price <= 0)) return null;
  const sizes = new Set(packs.map((p) => p!.credits));
  return sizes.size === packs.length ? (packs as { credits: number; price: number }[]) : null;
}

/** CREDIT_PACKS parsed (validated when the config was loaded). */
export function creditPacks(config: Pick<Config, 'CREDIT_PACKS'>): { credits: number; price: number }[] {
  return parseCreditPacks(config.CREDIT_PACKS) ?? [];
}

/** WEBHOOK_RETRY_SCHEDULE in milliseconds (validated when the config was loaded). */
export function webhookRetrySchedule(config: Pick<Config, 'WEBHOOK_RETRY_SCHEDULE'>): number[] {
  return parseSchedule(config.WEBHOOK_RETRY_SCHEDULE) ?? [];
}

function emptyToUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}
