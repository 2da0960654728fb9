/**
 * The demo seed: two gateway processes started together on one empty database seed it once, and both
 * serve; a seed abandoned half way is finished by a later start once its lease has passed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase } from '../../src/data/connection.js';
import { MongoSeedClaimStore } from '../../src/data/demo-seed-claim.js';
import { DEMO_EMAIL, DemoSeeder, SEED_LEASE_MS } from '../../src/domain/demo/seed.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startGatewayProcess, type GatewayProcess } from './gateway-process.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

const freshDbName = () => `t_demo_seed_${randomUUID().slice(0, 8)}`;

describe('two gateways started together on an empty database', () => {
  it('seed the demo once (one key printed, one account, one console user); both start and serve', async () => {
    const dbName = freshDbName();
    const uri = `${inject('mongoUri').replace(/\/?$/, '/')}${dbName}`;
    const env = { MONGODB_URI: uri, IN_PROCESS_WORKER: 'false' };
    const gateways: GatewayProcess[] = await Promise.all([startGatewayProcess(env, { demoKey: false }), startGatewayProcess(env, { demoKey: false })]);
    for (const gw of gateways) cleanup.push(() => gw.dispose());

    // Both serve. Each one's request line comes after anything it printed at start.
    for (const gw of gateways) {
      expect((await fetch(`${gw.base}/readyz`)).status).toBe(200);
      await gw.line(/"incoming request"/);
    }
    const printed = gateways.flatMap((gw) => gw.lines.filter((l) => /^\s+wi_live_[0-9a-f]{64}$/.test(l)).map((l) => l.trim()));
    expect(printed, gateways.map((gw) => gw.lines.join('\n') + gw.stderr()).join('\n----\n')).toHaveLength(1);

    const connection = await connectDatabase(inject('mongoUri'), { dbName });
    cleanup.push(() => connection.close());
    const db = connection.db!;
    expect(await db.collection('accounts').countDocuments()).toBe(1);
    expect(await db.collection('console_users').find().toArray()).toMatchObject([{ email: DEMO_EMAIL }]);

    // The printed key works on either gateway.
    for (const gw of gateways) {
      const res = await fetch(`${gw.base}/api/playground/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${printed[0]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ keyword: 'serendipity' }),
      });
      expect(res.status).toBe(200);
    }
    expect(await db.collection('settings').findOne({ _id: 'demo-seed' as never })).toMatchObject({ state: 'done' });
  });
});

describe('NODE_ENV=production', () => {
  it('seeds no demo on an empty database and prints no key or password', async () => {
    const dbName = freshDbName();
    const env = { NODE_ENV: 'production', MONGODB_URI: `${inject('mongoUri').replace(/\/?$/, '/')}${dbName}`, PUBLIC_BASE_URL: 'https://api.example.com', SMTP_URL: 'smtp://127.0.0.1:25', IN_PROCESS_WORKER: 'false' };
    const gw = await startGatewayProcess(env, { demoKey: false });
    cleanup.push(() => gw.dispose());
    expect((await fetch(`${gw.base}/readyz`)).status).toBe(200);
    await gw.line(/"incoming request"/);
    const output = gw.lines.join('\n');
    expect(output).not.toMatch(/wi_live_|password/);
    expect(output).toMatch(/no demo account in production/);
    const connection = await connectDatabase(inject('mongoUri'), { dbName });
    cleanup.push(() => connection.close());
    expect(await connection.db!.collection('accounts').countDocuments()).toBe(0);
    expect(await connection.db!.collection('console_users').countDocuments()).toBe(0);
  });
});

describe('DemoSeeder', () => {
  let t: TestApp;
  let clock = Date.UTC(2026, 0, 1);
  const seeder = (overrides: Partial<ConstructorParameters<typeof DemoSeeder>[0]> = {}) =>
    new DemoSeeder({
      claims: new MongoSeedClaimStore(t.connection),
      credits: t.services.credits,
      keys: t.services.keys,
      users: t.services.console.users,
      actor: { actor: 'test', ip: null, host: 'test' },
      holder: randomUUID(),
      now: () => new Date(clock),
      ...overrides,
    });

  it('a seed abandoned half way is left alone during its lease, then finished by the next start; then never again', async () => {
    t = await startTestApp({ dbName: freshDbName() });
    cleanup.push(() => t.close());
    // Dies after creating the account, before the console user.
    const dying = seeder({ users: { ...t.services.console.users, list: (a) => t.services.console.users.list(a), delete: (u, a) => t.services.console.users.delete(u, a), create: () => Promise.reject(new Error('killed')) } });
    await expect(dying.seed()).rejects.toThrow('killed');
    const [abandoned] = await t.connection.db!.collection('accounts').find().toArray();

    clock += SEED_LEASE_MS - 1;
    expect(await seeder().seed()).toBeNull();
    clock += 2;
    const demos = await Promise.all([seeder().seed(), seeder().seed()]);
    const demo = demos.find((d) => d !== null)!;
    expect(demos.filter((d) => d !== null)).toHaveLength(1);
    expect(demo).toMatchObject({ email: DEMO_EMAIL, key: expect.stringMatching(/^wi_live_/) });

    // The same account, finished: one live key (the printed one) and one console user.
    expect(await t.connection.db!.collection('accounts').countDocuments()).toBe(1);
    const accountId = abandoned!._id.toHexString();
    const keys = (await t.services.keys.list(accountId)).filter((k) => !k.deletedAt);
    expect(keys.map((k) => k.prefix)).toEqual([demo.key.slice(0, 12)]);
    expect((await t.services.console.users.list(accountId)).map((u) => u.email)).toEqual([DEMO_EMAIL]);

    clock += 10 * SEED_LEASE_MS;
    expect(await seeder().seed()).toBeNull();
  });
});
