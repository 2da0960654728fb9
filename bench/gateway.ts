// Benchmark of the gateway's hot path (not a test): `npm run bench`.
// Three processes, as in production: the embedded database (unless MONGODB_URI is set), the gateway
// (this file with --server: the real buildServices + buildApp, plus three bare routes), and this client.
// Prints, in one run, req/s and p50/p99 latency of:
//  1. POST /api/playground/query with the WordNet provider (auth, validation, charge, definition);
//  2. a bare route (same server, same body, no work);
//  3. a bare route doing one raw-driver guarded findOneAndUpdate (the charge's guard and $inc);
//  4. the lookup of 1 on a second gateway process with the shared rate limit on
//     (RATE_LIMIT_PER_MINUTE=1000000000: counted in MongoDB, nothing refused), against 1 (limit off);
//  5. route 3 with the charge's whole update: usage counters included (what the database does for a
//     lookup, so that the gateway's own work can be told from the metered update's database cost);
//  6. the lookup of 1 with a key that has a credit limit no run reaches (issue 33: its credits on the
//     account, taken in the account's one guarded update; moved there by its first charge), against
//     1 (a key without one);
//  7. the lookup of 1 with Prometheus metrics on (what METRICS_PORT costs), served by a second gateway
//     in the same process as 1, so that on and off differ in nothing else;
//  8, 9. the GraphQL `lookup` mutation over POST /graphql with a client token of the key of 1 (its
//     Origin sent), without maxCredits and with a maxCredits no run reaches (issue 33: the budget's
//     reservation per charge);
// and the ratio 1 / 3: the target is ≥ 85% on the compiled build (issue 26); 1 is one account with one
// key and no limits on 32 connections, so 1 / 3 is also issue 33's hot account (≥ 100%). Scenarios alternate in
// rounds, so drift hits all alike. BENCH_BUILD (bench/build.ts): dist, the compiled build (default;
// built first if missing or stale), tsx, the sources through tsx, or compare: both, scenarios 1-3 on a
// gateway of each kind, interleaved.
// BENCH_PER_ROUND=1 prints every round's figures as well as the medians.
// BENCH_TRACING=1 adds one more: the lookup of 1 on a gateway with tracing on (spans sent to a sink).
// Figures are medians over the rounds. Parameters: BENCH_SECONDS (per round, 4), BENCH_ROUNDS (5),
// BENCH_CONCURRENCY (32 connections), MONGODB_URI (a real database instead of the embedded one).
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { cpuMicros } from '../packages/embedded-mongo/bench/proc-stats.js';
import { benchBuild, ensureBuild } from './build.js';

/** REST lookup's throughput over the bare route plus one guarded update's, on the compiled build (issue 26). */
const RATIO_TARGET = 0.85;
/** Metrics on: at most this much fewer lookups/s (issue 26). */
const METRICS_COST_TARGET = 0.03;
/** The web origin the bench's client tokens are bound to (sent as a browser would). */
const BENCH_ORIGIN = 'http://127.0.0.1:5173';
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const self = fileURLToPath(import.meta.url);

if (process.argv.includes('--server')) await server();
else await client();

/** The gateway under test: the production composition plus two bare routes for comparison. */
async function server(): Promise<void> {
  // The gateway's modules from the compiled build (tsx runs only this harness: it leaves .js alone),
  // or from the sources through tsx.
  const base = process.env.BENCH_SERVER_BUILD === 'tsx' ? '../src' : '../dist/src';
  const load = <T>(module: string) => import(`${base}/${module}`) as Promise<T>;
  const { loadConfig } = await load<typeof import('../src/config.js')>('config.js');
  const { connectDatabase } = await load<typeof import('../src/data/connection.js')>('data/connection.js');
  const { buildServices } = await load<typeof import('../src/services.js')>('services.js');
  const { buildApp } = await load<typeof import('../src/http/app.js')>('http/app.js');
  const { PrometheusMetrics } = await load<typeof import('../src/metrics/prometheus.js')>('metrics/prometheus.js');
  const config = loadConfig();
  const connection = await connectDatabase(config.MONGODB_URI!, { dbName: `bench_${process.pid}` });
  const services = await buildServices(config, { connection });
  const actor = { actor: 'bench', ip: null, host: 'bench' };
  const account = await services.credits.createAccount('bench', 1_000_000_000, actor);
  const key = await services.keys.create(account.id, 'bench', actor);
  // The same account's second key, with a credit limit no run can reach: every lookup reserves on it.
  const capped = await services.keys.create(account.id, 'bench capped', actor, { creditLimit: 1_000_000_000 });
  // Client tokens of the first key, as a browser app holds them: one with a budget no run reaches.
  const principal = { accountId: account.id, keyId: key.id };
  const tokenPlain = (await services.clientTokens.mint(principal, { origins: [BENCH_ORIGIN], ttlSeconds: 3600 }, actor)).token;
  const tokenBudget = (await services.clientTokens.mint(principal, { origins: [BENCH_ORIGIN], ttlSeconds: 3600, maxCredits: 1_000_000_000 }, actor)).token;
  const raw = await services.credits.createAccount('bench raw', 1_000_000_000, actor);
  const accounts = connection.db!.collection('accounts');
  const { ObjectId } = await import('mongodb');
  const rawId = new ObjectId(raw.id);

  const app = await buildApp({ config, services });
  app.post('/bench/bare', async () => ({ ok: true }));
  // CPU time of this process, so the client can report the gateway's cost per request whatever else
  // runs on the machine.
  app.get('/bench/cpu', async () => process.cpuUsage());
  // BENCH_METRICS_TWIN=1: a second gateway in this same process, with Prometheus metrics on as main.ts
  // sets them up with METRICS_PORT (the exposition listener itself is idle during the run), so that
  // metrics on and off are compared in one process: same heap, same JIT, same CPU (issue 26). Its
  // services are its own (the domain's counters are part of the cost), on the same database.
  let twin: { app: typeof app; services: typeof services } | undefined;
  if (process.env.BENCH_METRICS_TWIN === '1') {
    const metrics = new PrometheusMetrics();
    const twinServices = await buildServices(config, { connection, metrics });
    const twinApp = await buildApp({ config, services: twinServices, metrics });
    twinApp.get('/bench/cpu', async () => process.cpuUsage());
    await twinApp.listen({ port: 0, host: '127.0.0.1' });
    twin = { app: twinApp, services: twinServices };
  }
  // The charge's shape: a lookup's one-shot guarded $inc (it records no operation id).
  app.post('/bench/db', async () => {
    const doc = await accounts.findOneAndUpdate(
      { _id: rawId, credits: { $gte: 1 } },
      { $inc: { credits: -1 }, $set: { updatedAt: new Date() } },
      { returnDocument: 'after', projection: { credits: 1 } },
    );
    return { credits: doc?.credits };
  });
  // The same round trip with the charge's whole update: the lookup's usage counters (issue 18: the
  // metered update costs the database more than the bare one, which is not the gateway's own work).
  const { utcDay } = await load<typeof import('../src/domain/usage/types.js')>('domain/usage/types.js');
  const { usageCounterPaths } = await load<typeof import('../src/data/models/usage.js')>('data/models/usage.js');
  app.post('/bench/metered', async () => {
    const day = utcDay(new Date());
    const paths = usageCounterPaths(day, 'definitions', String(key.id));
    const doc = await accounts.findOneAndUpdate(
      { _id: rawId, credits: { $gte: 1 } },
      { $inc: { credits: -1, [paths.calls]: 1, [paths.credits]: 1 }, $set: { updatedAt: new Date() }, $min: { usageOldestDay: day } },
      { returnDocument: 'after', projection: { credits: 1 } },
    );
    return { credits: doc?.credits };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const metricsPort = twin ? (twin.app.server.address() as { port: number }).port : undefined;
  process.stdout.write(`${JSON.stringify({ ready: true, port, metricsPort, key: key.key, cappedKey: capped.key, tokenPlain, tokenBudget, keyFeed: services.keyFeedState() })}\n`);
  process.on('SIGTERM', () => {
    void app
      .close()
      .then(() => services.close())
      .then(() => twin?.app.close())
      .then(() => twin?.services.close())
      .then(() => connection.dropDatabase())
      .then(() => connection.close())
      .finally(() => process.exit(0));
  });
}

interface Result {
  requests: number;
  /** CPU microseconds the gateway (and the database process, when local) spent in the round. */
  gatewayCpuUs: number;
  dbCpuUs: number;
  errors: number;
  seconds: number;
  latencies: number[];
}

async function client(): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 4);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
  const children: ChildProcess[] = [];
  process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
  const build = benchBuild();
  if (build !== 'tsx') ensureBuild(root);

  let uri = process.env.MONGODB_URI;
  if (!uri) {
    const db = spawn(process.execPath, ['--import', 'tsx/esm', path.join(root, 'packages/embedded-mongo/src/cli.ts'), '--port=0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(db);
    uri = (await firstLine(db, (l) => l.startsWith('MONGODB_URI='))).slice('MONGODB_URI='.length);
    console.log(`embedded database: ${uri} (own process)`);
  }
  // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of the gateway process there.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // BENCH_GATEWAY_NODE_ARGS: more node options for the gateway processes (e.g. a GC setting to try).
  prof.push(...(process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const startGateway = async (env: Record<string, string>, serverBuild: 'dist' | 'tsx' = build === 'tsx' ? 'tsx' : 'dist', preload: string[] = []) => {
    const child = spawn(process.execPath, [...prof, '--import', 'tsx/esm', ...preload, self, '--server'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      // Production refuses to start without SMTP_URL; the bench sends no mail (the transport connects only to send).
      env: { SMTP_URL: 'smtp://127.0.0.1:2525', ...process.env, MONGODB_URI: uri, LOG_LEVEL: 'warn', IN_PROCESS_WORKER: 'false', NODE_ENV: 'production', RATE_LIMIT_PER_MINUTE: '0', BENCH_SERVER_BUILD: serverBuild, ...env },
    });
    children.push(child);
    const ready = JSON.parse(await firstLine(child, (l) => l.startsWith('{'))) as { port: number; metricsPort?: number; key: string; cappedKey: string; tokenPlain: string; tokenBudget: string; keyFeed: string };
    return { child, ...ready };
  };
  // With its metrics twin: the same process serves the lookup with metrics on, on metricsPort.
  const gateway = await startGateway({ BENCH_METRICS_TWIN: '1' });
  // The same gateway with the shared rate limit on, so high that nothing is refused: what one counted
  // request costs (a guarded $inc upsert in MongoDB per lookup).
  const limited = await startGateway({ RATE_LIMIT_PER_MINUTE: '1000000000' });
  const viaTsx = build === 'compare' ? await startGateway({}, 'tsx') : undefined;
  // BENCH_TRACING=1: one more gateway with tracing on (every span exported over OTLP/HTTP to a sink
  // in this process), for the cost of tracing: scenario 6 against scenario 1.
  const traced = process.env.BENCH_TRACING ? await startGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: await otlpSink() }, undefined, ['--import', './src/tracing/gateway.ts']) : undefined;
  const gw = gateway.child;
  console.log(`build measured: ${build === 'compare' ? 'compiled (dist/) and tsx, interleaved' : build === 'tsx' ? 'the sources through tsx' : 'compiled (dist/)'}`);
  console.log(`gateway: 127.0.0.1:${gateway.port}, key cache ${gateway.keyFeed === 'changestream' ? 'on (change stream)' : 'off (polling)'}`);
  console.log(`gateway with the shared rate limit on: 127.0.0.1:${limited.port}`);
  console.log(`${concurrency} connections, ${rounds} rounds × ${seconds}s per scenario, on ${os.cpus().length} CPUs\n`);

  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const words = ['serendipity', 'dog', 'tree', 'running', 'ocean', 'happier', 'light', 'house', 'qzxvbnmw', 'computer'];
  const all: { name: string; path: string; gw: typeof gateway; key?: string; graphql?: boolean }[] = [
    { name: 'POST /api/playground/query (wordnet)', path: '/api/playground/query', gw: gateway },
    { name: 'bare route', path: '/bench/bare', gw: gateway },
    { name: 'bare route + 1 guarded findOneAndUpdate', path: '/bench/db', gw: gateway },
    { name: 'POST /api/playground/query, rate limit on', path: '/api/playground/query', gw: limited },
    { name: 'bare route + the charge\'s metered update', path: '/bench/metered', gw: gateway },
    { name: 'POST /api/playground/query, capped key', path: '/api/playground/query', gw: gateway, key: gateway.cappedKey },
    { name: 'POST /api/playground/query, metrics on', path: '/api/playground/query', gw: { ...gateway, port: gateway.metricsPort! } },
    { name: 'POST /graphql lookup, client token', path: '/graphql', gw: gateway, key: gateway.tokenPlain, graphql: true },
    { name: 'POST /graphql lookup, token with maxCredits', path: '/graphql', gw: gateway, key: gateway.tokenBudget, graphql: true },
    ...(viaTsx
      ? [
          { name: 'POST /api/playground/query (tsx)', path: '/api/playground/query', gw: viaTsx },
          { name: 'bare route (tsx)', path: '/bench/bare', gw: viaTsx },
          { name: 'bare route + 1 guarded update (tsx)', path: '/bench/db', gw: viaTsx },
        ]
      : []),
    ...(traced ? [{ name: 'POST /api/playground/query, tracing on', path: '/api/playground/query', gw: traced }] : []),
  ];
  // BENCH_ONLY=<index>[,<index>...]: only these scenarios (one alone, with BENCH_CPU_PROF, to profile it).
  const only = process.env.BENCH_ONLY;
  const scenarios = only === undefined ? all : only.split(',').map((i) => all[Number(i)]!);
  const dbPid = children.length > 1 ? children[0]!.pid : undefined;
  const measure = async (s: (typeof all)[number], secs: number): Promise<Result> => {
    const [g0, d0] = [await gatewayCpu(s.gw.port, agent), cpuMicros(dbPid)];
    const res = await load(s.gw.port, s.path, s.key ?? s.gw.key, words, agent, concurrency, secs, s.graphql);
    const [g1, d1] = [await gatewayCpu(s.gw.port, agent), cpuMicros(dbPid)];
    return { ...res, gatewayCpuUs: g1 - g0, dbCpuUs: d1 - d0 };
  };
  const load0 = os.loadavg()[0]!;
  // Warm-up: JIT, connection pools, the definition cache for every word, the accounts' op lists.
  for (let w = 0; w < 2; w++) for (const s of scenarios) await measure(s, 2);
  const perRound: Result[][] = scenarios.map(() => []);
  for (let r = 0; r < rounds; r++) {
    // The order rotates, so no scenario always runs right after the same one.
    for (let j = 0; j < scenarios.length; j++) {
      const i = (j + r) % scenarios.length;
      perRound[i]!.push(await measure(scenarios[i]!, seconds));
    }
  }

  // Each figure is the median over the rounds: other load on a shared machine hits single rounds.
  const rows = scenarios.map((s, i) => {
    const rs = perRound[i]!;
    const sorted = rs.flatMap((r) => r.latencies).sort((a, b) => a - b);
    return {
      name: s.name,
      rps: median(rs.map((r) => r.requests / r.seconds)),
      p50: pct(sorted, 0.5),
      p99: pct(sorted, 0.99),
      gwUs: median(rs.map((r) => r.gatewayCpuUs / r.requests)),
      dbUs: dbPid ? median(rs.map((r) => r.dbCpuUs / r.requests)) : Number.NaN,
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  });
  console.log('scenario'.padEnd(44) + 'req/s'.padStart(8) + 'p50 ms'.padStart(9) + 'p99 ms'.padStart(9) + 'gw µs/req'.padStart(11) + 'db µs/req'.padStart(11) + 'errors'.padStart(8));
  for (const r of rows) {
    console.log(
      r.name.padEnd(44) + r.rps.toFixed(0).padStart(8) + r.p50.toFixed(2).padStart(9) + r.p99.toFixed(2).padStart(9) + r.gwUs.toFixed(0).padStart(11) + r.dbUs.toFixed(0).padStart(11) + String(r.errors).padStart(8),
    );
  }
  // BENCH_PER_ROUND=1: each round's figures too (req/s / gateway µs / database µs per scenario), to see
  // how much other load on the machine moved single rounds.
  if (process.env.BENCH_PER_ROUND) {
    const rps = (r: Result) => r.requests / r.seconds;
    for (let r = 0; r < rounds; r++) {
      const cells = perRound.map((rs) => `${rps(rs[r]!).toFixed(0)}/${(rs[r]!.gatewayCpuUs / rs[r]!.requests).toFixed(0)}/${(rs[r]!.dbCpuUs / rs[r]!.requests).toFixed(0)}`);
      const ratio = perRound.length >= 3 ? `  ratio ${((rps(perRound[0]![r]!) / rps(perRound[2]![r]!)) * 100).toFixed(1)}%` : '';
      console.log(`round ${r}: ${cells.join('  ')}${ratio}`);
    }
  }
  const named = (name: string) => rows.find((r) => r.name === name);
  const tokenPlainRow = named('POST /graphql lookup, client token');
  const tokenBudgetRow = named('POST /graphql lookup, token with maxCredits');
  if (tokenPlainRow && tokenBudgetRow) {
    console.log(
      `client token budget: ${tokenBudgetRow.rps.toFixed(0)} GraphQL lookups/s with maxCredits vs ${tokenPlainRow.rps.toFixed(0)} without (${((tokenBudgetRow.rps / tokenPlainRow.rps - 1) * 100).toFixed(1)}%); ` +
        `gateway ${(tokenBudgetRow.gwUs - tokenPlainRow.gwUs).toFixed(0)} µs, database ${(tokenBudgetRow.dbUs - tokenPlainRow.dbUs).toFixed(0)} µs CPU more per lookup`,
    );
  }
  const hot = named('POST /api/playground/query (wordnet)');
  const bareDb = named('bare route + 1 guarded findOneAndUpdate');
  if (hot && bareDb) {
    console.log(`hot account: ${hot.rps.toFixed(0)} lookups/s on one account vs ${bareDb.rps.toFixed(0)} for the bare route + 1 guarded findOneAndUpdate (${((hot.rps / bareDb.rps) * 100).toFixed(1)}%)`);
  }
  const bare = named('bare route');
  // The lines below name their scenarios, so that BENCH_ONLY may leave any of them out.
  if (!hot) return finish(rows.some((r) => r.errors > 0));
  const off = hot;
  const ratio = bareDb ? hot.rps / bareDb.rps : Number.NaN;
  if (bareDb) {
    console.log(`\nfull lookup / bare route + DB round trip = ${(ratio * 100).toFixed(1)}% of the throughput (target ≥ ${RATIO_TARGET * 100}%: ${ratio >= RATIO_TARGET ? 'met' : 'NOT met'})`);
  }
  if (bareDb && bare) {
    // The same comparison in CPU time, which other load on the machine does not distort.
    const own = hot.gwUs - bareDb.gwUs;
    const roundTrip = bareDb.gwUs - bare.gwUs + (Number.isNaN(bareDb.dbUs) ? 0 : bareDb.dbUs);
    console.log(`gateway's own work per lookup ≈ ${own.toFixed(0)} µs CPU vs. ${roundTrip.toFixed(0)} µs CPU for one guarded findOneAndUpdate (driver + database)`);
  }
  const metered = named("bare route + the charge's metered update");
  if (metered) {
    console.log(`full lookup / bare route + the charge's metered update = ${((hot.rps / metered.rps) * 100).toFixed(1)}% (gateway's own work ≈ ${(hot.gwUs - metered.gwUs).toFixed(0)} µs CPU)`);
  }
  const on = named('POST /api/playground/query, rate limit on');
  if (on) {
    console.log(
      `shared rate limit: ${on.rps.toFixed(0)} lookups/s on vs ${off.rps.toFixed(0)} off (${((on.rps / off.rps - 1) * 100).toFixed(1)}%); ` +
        `gateway ${(on.gwUs - off.gwUs).toFixed(0)} µs, database ${(on.dbUs - off.dbUs).toFixed(0)} µs CPU more per lookup`,
    );
  }

  const capped = named('POST /api/playground/query, capped key');
  if (capped) {
    console.log(
      `key credit limit: ${capped.rps.toFixed(0)} lookups/s with a capped key vs ${off.rps.toFixed(0)} without (${((capped.rps / off.rps - 1) * 100).toFixed(1)}%); ` +
        `gateway ${(capped.gwUs - off.gwUs).toFixed(0)} µs, database ${(capped.dbUs - off.dbUs).toFixed(0)} µs CPU more per lookup`,
    );
  }

  const metricsOn = named('POST /api/playground/query, metrics on');
  if (metricsOn) {
    const cost = 1 - metricsOn.rps / off.rps;
    console.log(
      `metrics on: ${metricsOn.rps.toFixed(0)} lookups/s vs ${off.rps.toFixed(0)} off (${(cost * 100).toFixed(1)}% fewer; target ≤ ${METRICS_COST_TARGET * 100}%: ` +
        `${cost <= METRICS_COST_TARGET ? 'met' : 'NOT met'}); gateway ${(metricsOn.gwUs - off.gwUs).toFixed(0)} µs CPU more per lookup`,
    );
  }
  const tsxLookup = named('POST /api/playground/query (tsx)');
  const tsxDb = named('bare route + 1 guarded update (tsx)');
  if (tsxLookup && tsxDb) {
    const tsxRatio = tsxLookup.rps / tsxDb.rps;
    console.log(
      `tsx: full lookup / bare route + DB round trip = ${(tsxRatio * 100).toFixed(1)}% (compiled: ${(ratio * 100).toFixed(1)}%); ` +
        `lookup ${tsxLookup.gwUs.toFixed(0)} µs CPU through tsx vs ${hot.gwUs.toFixed(0)} compiled`,
    );
  }
  console.log(`node ${process.version}, load average ${load0.toFixed(1)} → ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs`);

  await finish(rows.some((r) => r.errors > 0));

  async function finish(failed: boolean): Promise<never> {
    agent.destroy();
    for (const g of [gw, limited.child, ...(viaTsx ? [viaTsx.child] : [])]) {
      g.kill('SIGTERM');
      await new Promise((r) => g.once('exit', r));
    }
    for (const c of children) c.kill('SIGTERM');
    process.exit(failed ? 1 : 0);
  }
}

/** Keeps `concurrency` requests in flight for `seconds`; records each latency. */
async function load(port: number, urlPath: string, key: string, words: string[], agent: http.Agent, concurrency: number, seconds: number, graphql = false): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const word = words[i++ % words.length];
      const body = JSON.stringify(graphql ? { query: `mutation { lookup(keyword: "${word}") { credits } }` } : { keyword: word });
      const t0 = performance.now();
      const status = await request(port, urlPath, key, body, agent, graphql ? { origin: BENCH_ORIGIN } : {});
      latencies.push(performance.now() - t0);
      if (status !== 200) errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { requests: latencies.length, gatewayCpuUs: 0, dbCpuUs: 0, errors, seconds: (performance.now() - start) / 1000, latencies };
}

function request(port: number, urlPath: string, key: string, body: string, agent: http.Agent, extra: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: urlPath, method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...extra } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

async function gatewayCpu(port: number, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/bench/cpu', agent }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          const u = JSON.parse(text) as { user: number; system: number };
          resolve(u.user + u.system);
        });
      })
      .on('error', reject);
  });
}

function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
}

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : Number.NaN;
}

async function firstLine(child: ChildProcess, match: (line: string) => boolean): Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before it was ready`)));
    lines.on('line', (line) => {
      if (match(line)) resolve(line);
    });
  });
}

/** An OTLP/HTTP endpoint that takes every export and keeps nothing (BENCH_TRACING). */
async function otlpSink(): Promise<string> {
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sink.unref();
  return `http://127.0.0.1:${(sink.address() as { port: number }).port}`;
}
