// Benchmark of the console (not a test): `npm run bench:console`. In one process, on the embedded
// database (or MONGODB_URI): the cost of a sign-in (argon2id, m=19 MiB, t=2, p=1, plus the session
// write and the audit entry) for a known and an unknown email, and the server time of the API keys
// page for an account with 1,000 keys (list + render), measured by Fastify's inject (no sockets).
// Parameters: BENCH_KEYS (1000), BENCH_ROUNDS (20).
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../src/data/connection.js';
import { startEmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { buildApp } from '../src/http/app.js';
import { buildServices } from '../src/services.js';

const KEYS = Number(process.env.BENCH_KEYS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);

const embedded = process.env.MONGODB_URI ? undefined : await startEmbeddedMongo({ port: 0 });
const uri = process.env.MONGODB_URI ?? embedded!.uri;
const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent', MONGODB_URI: uri, IN_PROCESS_WORKER: 'false', PUBLIC_BASE_URL: 'http://localhost:4000' });
const connection = await connectDatabase(uri, { dbName: `bench_console_${process.pid}` });
const services = await buildServices(config, { connection });
const app = await buildApp({ config, services, logger: false });
await app.ready();

const actor = { actor: 'bench', ip: null, host: 'bench' };
const account = await services.credits.createAccount('bench', 100, actor);
for (let i = 0; i < KEYS; i++) await services.keys.create(account.id, `key ${i}`, actor);
const email = 'bench@example.com';
const password = 'a long bench passphrase';
await services.console.users.create(account.id, email, password, actor);

const form = (e: string, pw = password) => ({
  method: 'POST' as const,
  url: '/console/sign-in',
  headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
  payload: new URLSearchParams({ email: e, password: pw }).toString(),
});

async function timed(fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out.sort((a, b) => a - b);
}
const median = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => xs[Math.floor(xs.length * 0.9)]!;

let cookie = '';
const known = await timed(async () => {
  const res = await app.inject(form(email));
  if (res.statusCode !== 303) throw new Error(`sign-in answered ${res.statusCode}`);
  cookie = String(res.headers['set-cookie']).split(';')[0]!;
});
// Failures, interleaved so that whatever else the machine does hits both alike; spread over client
// addresses and cleared, so no throttle engages.
const wrong: number[] = [];
const unknown: number[] = [];
for (let n = 0; n < ROUNDS; n++) {
  for (const [into, e] of [[wrong, email], [unknown, `nobody-${n}@example.com`]] as const) {
    const t0 = performance.now();
    const res = await app.inject({ ...form(e, 'not the password'), remoteAddress: `10.1.${n}.1` });
    into.push(performance.now() - t0);
    if (res.statusCode !== 401) throw new Error(`failed sign-in answered ${res.statusCode}`);
    await connection.db!.collection('signin_throttle').deleteMany({});
  }
}
wrong.sort((a, b) => a - b);
unknown.sort((a, b) => a - b);
let bytes = 0;
const keysPage = await timed(async () => {
  const res = await app.inject({ method: 'GET', url: '/console/keys', headers: { cookie } });
  if (res.statusCode !== 200) throw new Error(`keys page answered ${res.statusCode}`);
  bytes = res.body.length;
});

// What a browser downloads for a page: its HTML and every asset it loads (brotli where offered).
async function transfer(url: string): Promise<number> {
  const res = await app.inject({ method: 'GET', url, headers: { cookie, 'accept-encoding': 'br, gzip' } });
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  return res.rawPayload.length;
}
const consoleAssets = ['/console/assets/console.css', '/console/assets/console.js'];
const ruru = ['ruru.js', 'ruru.css', 'editorWorker.js', 'graphqlWorker.js', 'jsonWorker.js'].map((f) => `/console/explorer/static/${f}`);
const pageWeight = async (page: string, assets: string[]) => {
  const html = await transfer(page);
  const sizes = await Promise.all(assets.map(transfer));
  return { html, assets: sizes.reduce((a, b) => a + b, 0) };
};
const keysWeight = await pageWeight('/console/keys', consoleAssets);
const explorerWeight = await pageWeight('/console/explorer', [...consoleAssets, '/console/assets/explorer.js', ...ruru]);
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

const fmt = (xs: number[]) => `median ${median(xs).toFixed(1)} ms, p90 ${p90(xs).toFixed(1)} ms`;
console.log(`sign-in, right password:       ${fmt(known)}`);
console.log(`sign-in, wrong password:       ${fmt(wrong)}`);
console.log(`sign-in, unknown email:        ${fmt(unknown)}   (the same hashing work as a wrong password)`);
console.log(`API keys page, ${KEYS} keys:     ${fmt(keysPage)} server time, ${(bytes / 1024).toFixed(0)} KiB of HTML`);
console.log(`page weight, API keys:         ${kib(keysWeight.html)} HTML + ${kib(keysWeight.assets)} of assets (${KEYS} keys; stylesheet and script)`);
console.log(`page weight, Explorer:         ${kib(explorerWeight.html)} HTML + ${kib(explorerWeight.assets)} of assets (GraphiQL, Monaco and its three workers, brotli)`);

await app.close();
await services.close();
await connection.dropDatabase();
await connection.close();
await embedded?.stop();
