// kill -9 of a gateway between the purchase record and the balance update: a gateway child process
// (src/main.ts as npm start runs it, on the suite's database) with a test-only fault hook preloaded
// (test/fixtures/billing-crash-hook.ts) SIGKILLs itself right after writing the purchase record. Then
// Stripe's redelivery reaches a fresh gateway: the credits are granted once, and again only once.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DB = 'billing_crash';
const uri = `${inject('mongoUri')}${DB}`;
const WEBHOOK_SECRET = 'whsec_crash_standin_secret_0123456';
let client: MongoClient;
let standIn: StripeStandIn;
const children: ChildProcess[] = [];

function startGateway(extra: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/fixtures/billing-crash-hook.ts', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'development',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      MONGODB_URI: uri,
      IN_PROCESS_WORKER: 'false',
      ...standIn.gatewayEnv(),
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const base = /^Gateway listening on (\S+) /.exec(line)?.[1];
      if (base) resolve({ child, base });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${stderr}`)));
  });
}

beforeAll(async () => {
  client = await MongoClient.connect(uri);
  await client.db(DB).dropDatabase();
  standIn = await startStripeStandIn({ webhookSecret: WEBHOOK_SECRET });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await standIn?.close();
  await client?.close();
});

describe('kill -9 between the purchase record and the balance update', () => {
  it("Stripe's redelivery to a fresh gateway grants the credits once", async () => {
    const doomed = await startGateway({ BILLING_CRASH_AT: 'purchase-recorded' });
    const accounts = client.db(DB).collection('accounts');
    const { insertedId } = await accounts.insertOne({ name: 'crash test', credits: 5, ops: [], createdAt: new Date(), updatedAt: new Date() });
    const accountId = insertedId.toHexString();
    const session = {
      id: 'cs_test_crash_0001',
      object: 'checkout.session',
      mode: 'payment',
      status: 'complete',
      payment_status: 'paid',
      amount_total: 500,
      currency: 'usd',
      client_reference_id: accountId,
      metadata: { account_id: accountId, credits: '100' },
      payment_intent: 'pi_test_crash_0001',
    };
    const event = standIn.event('checkout.session.completed', session);

    const exited = new Promise<NodeJS.Signals | null>((r) => doomed.child.once('exit', (_code, signal) => r(signal)));
    await expect(standIn.send(event, { url: `${doomed.base}/api/stripe/webhook` })).rejects.toThrow();
    expect(await exited).toBe('SIGKILL');
    // The record is written, the balance is not.
    expect(await client.db(DB).collection('purchases').findOne({ _id: session.id as never })).toMatchObject({ state: 'pending', credits: 100 });
    expect((await accounts.findOne({ _id: insertedId }))!.credits).toBe(5);

    const fresh = await startGateway({});
    const answers = await Promise.all([1, 2, 3].map(() => standIn.send(event, { url: `${fresh.base}/api/stripe/webhook` })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await accounts.findOne({ _id: insertedId }))!.credits).toBe(105);
    expect(await client.db(DB).collection('purchases').findOne({ _id: session.id as never })).toMatchObject({ state: 'granted' });
    expect(await client.db(DB).collection('audit_entries').countDocuments({ accountId, event: 'credits.purchased' })).toBe(1);
  });
});
