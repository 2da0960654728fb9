// Benchmark of sign-up (not a test): `npm run bench:signup`. In one process, on the embedded database
// (or MONGODB_URI), with a real SMTP server on loopback: the time from a sign-up form post to the
// verification email accepted by the SMTP server (argon2id hash, throttle, token, SMTP delivery), and
// the page weight of Settings (HTML plus the stylesheet and script it loads, uncompressed).
// Parameters: BENCH_SIGNUPS (50).
import { performance } from 'node:perf_hooks';
import { startEmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../src/data/connection.js';
import { buildApp } from '../src/http/app.js';
import { buildServices } from '../src/services.js';
import { startSmtpServer } from '../test/helpers/smtp.js';

const SIGNUPS = Number(process.env.BENCH_SIGNUPS ?? 50);

const smtp = await startSmtpServer();
const embedded = process.env.MONGODB_URI ? undefined : await startEmbeddedMongo({ port: 0 });
const uri = process.env.MONGODB_URI ?? embedded!.uri;
const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent', MONGODB_URI: uri, IN_PROCESS_WORKER: 'false', PUBLIC_BASE_URL: 'http://localhost:4000', SMTP_URL: smtp.url });
const connection = await connectDatabase(uri, { dbName: `bench_signup_${process.pid}` });
const services = await buildServices(config, { connection });
const app = await buildApp({ config, services, logger: false });
await app.ready();

const latencies: number[] = [];
let firstBrowser = '';
for (let i = 0; i < SIGNUPS; i++) {
  const email = `bench-${i}@example.com`;
  const t0 = performance.now();
  const res = await app.inject({
    method: 'POST',
    url: '/console/sign-up',
    // One client address per sign-up: the per-IP email limit (20 an hour) would refuse the 21st.
    remoteAddress: `10.1.${i >> 8}.${i & 255}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: new URLSearchParams({ accountName: `Bench ${i}`, email, password: 'a long bench passphrase' }).toString(),
  });
  if (res.statusCode !== 200) throw new Error(`sign-up answered ${res.statusCode}`);
  if (i === 0) firstBrowser = String(res.headers['set-cookie']).split(';')[0]!;
  const mail = await smtp.nextMessage(email);
  latencies.push(mail.acceptedAt - t0);
}
latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]!;

// Settings, signed in as the owner of the first sign-up (its link opened in the browser that sent it).
const link = smtp.messages[0]!.links[0]!;
const opened = await app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search, headers: { cookie: firstBrowser } });
const cookie = String(opened.headers['set-cookie']).split(';')[0]!;
const settings = await app.inject({ method: 'GET', url: '/console/settings', headers: { cookie } });
if (settings.statusCode !== 200) throw new Error(`settings answered ${settings.statusCode}`);
const assets = await Promise.all(['/console/assets/console.css', '/console/assets/console.js'].map((url) => app.inject({ method: 'GET', url })));
const htmlBytes = settings.rawPayload.length;
const assetBytes = assets.reduce((n, r) => n + r.rawPayload.length, 0);

const ms = (x: number) => `${x.toFixed(1)} ms`;
console.log(`sign-up → verification email accepted by SMTP, ${SIGNUPS} sign-ups: p50 ${ms(at(0.5))}, p90 ${ms(at(0.9))}, max ${ms(latencies.at(-1)!)}`);
console.log(`Settings page weight: ${htmlBytes} B HTML + ${assetBytes} B stylesheet and script = ${htmlBytes + assetBytes} B (uncompressed)`);

await app.close();
await services.close();
await connection.dropDatabase();
await connection.close();
await smtp.close();
await embedded?.stop();
