/**
 * Integration test harness: a real gateway (services + Fastify) on the test database, listening on
 * 127.0.0.1:0.
 *
 *   const t = await startTestApp();                       // in beforeAll
 *   const { key, accountId } = await createAccountWithKey({ credits: 5 });
 *   await fetch(`${t.baseUrl}/api/playground/query`, ...);
 *   await t.close();                                      // in afterAll
 *
 * Every test file gets its own database (named after the file), shared by all apps the file starts
 * (two apps = two gateway instances on one database). Config overrides are env-style strings.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Connection } from 'mongoose';
import { expect, inject } from 'vitest';
import { loadConfig, type Config, type ConfigInput } from '../../src/config.js';
import { connectDatabase } from '../../src/data/connection.js';
import { buildApp, type BuildAppOptions } from '../../src/http/app.js';
import { buildServices, type ServiceDeps, type Services } from '../../src/services.js';

export interface TestApp {
  baseUrl: string;
  app: FastifyInstance;
  services: Services;
  config: Config;
  connection: Connection;
  /** Creates an account with `credits` and one key on this app's database. */
  createAccountWithKey(opts?: { credits?: number; name?: string }): Promise<TestAccount>;
  close(): Promise<void>;
}

export interface TestAccount {
  accountId: string;
  keyId: string;
  /** The full key, `wi_live_…`. */
  key: string;
}

export interface TestAppOverrides extends ConfigInput {
  /** Database name; default: one per test file. */
  dbName?: string;
  /** Passed to buildServices (e.g. a fake definitionProvider, keyChanges: 'poll'). */
  deps?: Partial<Omit<ServiceDeps, 'connection'>>;
  /** Collect the app's JSON log lines (at LOG_LEVEL, default silent: pass LOG_LEVEL too). */
  logStream?: { write(line: string): void };
  /** Told of every route buildApp registers. */
  onRoute?: BuildAppOptions['onRoute'];
  /** Runs after buildApp and before listen, e.g. to add a test-only route. */
  beforeListen?: (app: FastifyInstance) => void | Promise<void>;
}

let lastStarted: TestApp | undefined;
const dropped = new Set<string>();

export async function startTestApp(overrides: TestAppOverrides = {}): Promise<TestApp> {
  const { dbName: givenDbName, deps, logStream, beforeListen, onRoute, ...env } = overrides;
  const uri = inject('mongoUri');
  const dbName = givenDbName ?? databaseNameForThisFile();
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', ...env, MONGODB_URI: uri });
  const connection = await connectDatabase(uri, { dbName, serverSelectionTimeoutMS: 5000 });
  // A fresh database per file and run; a second app of the same file shares it.
  if (!dropped.has(dbName)) {
    dropped.add(dbName);
    await connection.dropDatabase();
  }
  const services = await buildServices(config, { connection, ...deps });
  const app = await buildApp({ config, services, onRoute, ...(logStream ? { logStream } : { logger: false as const }) });
  await beforeListen?.(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const harness: TestApp = {
    baseUrl: `http://127.0.0.1:${port}`,
    app,
    services,
    config,
    connection,
    createAccountWithKey: (opts) => createAccountWithKey({ ...opts, services }),
    async close() {
      await app.close();
      await services.close();
      await connection.close();
      if (lastStarted === harness) lastStarted = undefined;
    },
  };
  lastStarted = harness;
  return harness;
}

/** An account with `credits` (default 10) and one API key, through the domain services. */
export async function createAccountWithKey(opts: { credits?: number; name?: string; services?: Services } = {}): Promise<TestAccount> {
  const services = opts.services ?? lastStarted?.services;
  if (!services) throw new Error('createAccountWithKey: start a test app first (or pass services)');
  const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
  const account = await services.credits.createAccount(opts.name ?? `test account ${randomUUID().slice(0, 8)}`, opts.credits ?? 10, actor);
  const created = await services.keys.create(account.id, 'test key', actor);
  return { accountId: account.id, keyId: created.id, key: created.key };
}

function databaseNameForThisFile(): string {
  const file = expect.getState().testPath ?? randomUUID();
  const base = file.split(/[\\/]/).pop()!.replace(/\.test\.ts$/, '').replace(/[^a-zA-Z0-9]/g, '_').slice(0, 30);
  return `t_${base}_${createHash('sha1').update(file).digest('hex').slice(0, 8)}`;
}
