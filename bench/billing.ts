/**
 * Stripe webhook → credits visible (`npm run bench:billing`): a gateway in this process on the embedded
 * database (or MONGODB_URI), the Stripe stand-in (test/fixtures/stripe-standin.ts, not Stripe) sending
 * signed `checkout.session.completed` events one at a time. For each: from the moment the event is
 * sent to the moment a separate database connection reads the credits on the account (the gateway
 * answers 2xx only once the grant is durable, so the read follows the answer). Prints p50/p99 of that,
 * and of the gateway's answer alone. Env: BENCH_SAMPLES (200).
 */
import { startEmbeddedMongo, type EmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { MongoClient, ObjectId } from 'mongodb';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../src/data/connection.js';
import { buildApp } from '../src/http/app.js';
import { buildServices } from '../src/services.js';
import { startStripeStandIn } from '../test/fixtures/stripe-standin.js';
import { pct, say } from './report.js';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const SECRET = 'whsec_bench_standin_secret_0123456789';

async function main(): Promise<void> {
  let embedded: EmbeddedMongo | undefined;
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    embedded = await startEmbeddedMongo({ port: 0 });
    uri = embedded.uri;
  }
  const dbUri = new URL(uri);
  dbUri.pathname = `/bench_billing_${Date.now()}`;
  const standIn = await startStripeStandIn({ webhookSecret: SECRET });
  const config = loadConfig({ MONGODB_URI: dbUri.toString(), IN_PROCESS_WORKER: 'false', NODE_ENV: 'production', LOG_LEVEL: 'silent', STRIPE_SECRET_KEY: 'sk_test_bench', STRIPE_WEBHOOK_SECRET: SECRET, STRIPE_API_BASE: standIn.base });
  const connection = await connectDatabase(dbUri.toString());
  const services = await buildServices(config, { connection, role: 'bench-gateway' });
  const app = await buildApp({ config, services, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  standIn.webhookUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/stripe/webhook`;
  const reader = await MongoClient.connect(dbUri.toString());
  const accounts = reader.db().collection('accounts');

  const account = await services.credits.createAccount('bench', 0, { actor: 'bench', ip: null, host: 'bench' });
  const _id = new ObjectId(account.id);
  const visible: number[] = [];
  const answered: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const session = { id: `cs_test_bench_${i}`, object: 'checkout.session', mode: 'payment', status: 'complete', payment_status: 'paid', amount_total: 500, currency: 'usd', metadata: { account_id: account.id, credits: '100' }, payment_intent: `pi_test_bench_${i}` };
    const started = performance.now();
    const sent = await standIn.send(standIn.event('checkout.session.completed', session));
    if (sent.status !== 200) throw new Error(`event ${i}: ${sent.status} ${sent.body}`);
    answered.push(sent.ms);
    const doc = await accounts.findOne({ _id }, { projection: { credits: 1 } });
    if (doc?.credits !== (i + 1) * 100) throw new Error(`event ${i}: balance ${doc?.credits}, expected ${(i + 1) * 100}`);
    visible.push(performance.now() - started);
  }
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  say(`Stripe event sent → credits visible (read by another connection), ${SAMPLES} events: p50 ${ms(pct(visible, 50))}, p99 ${ms(pct(visible, 99))}`);
  say(`Stripe event sent → gateway's 2xx (grant durable): p50 ${ms(pct(answered, 50))}, p99 ${ms(pct(answered, 99))}`);

  await reader.close();
  await app.close();
  await services.close();
  await connection.close();
  await standIn.close();
  await embedded?.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`${String((err as Error)?.stack ?? err)}\n`);
  process.exit(1);
});
