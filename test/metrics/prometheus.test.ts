import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../gateway/gateway-process.js';
import { spawnWorker, type WorkerProcess } from '../images/worker-process.js';
import { until } from '../helpers/until.js';

// A gateway and a worker as processes with METRICS_PORT set, checked with Debian's Prometheus tools:
// promtool on what they serve, and a real Prometheus (a child process with a config written here)
// scraping both on loopback. CI installs the `prometheus` package (.ci/run).
const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';
const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const LOOKUPS = 3;

let gateway: GatewayProcess;
let worker: WorkerProcess;
let gatewayMetrics: string;
let workerMetrics: string;
let jobId: string;
let scratch: string;
let prometheus: ChildProcess | undefined;

const dbUri = () => `${inject('mongoUri').replace(/\/?$/, '/')}t_metrics_${process.pid}`;
const scrape = async (url: string) => (await fetch(url)).text();

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'metrics-test-'));
  gateway = await startGatewayProcess({ MONGODB_URI: dbUri(), METRICS_PORT: '0', IN_PROCESS_WORKER: 'false', LOG_LEVEL: 'warn' });
  gatewayMetrics = /^Metrics on (\S+)\.$/.exec(await gateway.line(/^Metrics on /))![1]!;
  worker = spawnWorker({ MONGODB_URI: dbUri(), METRICS_PORT: '0', HOST: '127.0.0.1' });
  await worker.ready;
  const port = Number(/"port":(\d+),"msg":"metrics listening"/.exec(worker.output())![1]);
  workerMetrics = `http://127.0.0.1:${port}/metrics`;

  const auth = { Authorization: `Bearer ${gateway.key}`, 'Content-Type': 'application/json' };
  for (let i = 0; i < LOOKUPS; i++) {
    const res = await fetch(`${gateway.base}/api/playground/query`, { method: 'POST', headers: auth, body: JSON.stringify({ keyword: 'serendipity' }) });
    expect(res.status).toBe(200);
  }
  // Two answers under route templates with ids in their URLs, and one no route matches.
  expect((await fetch(`${gateway.base}/api/playground/images/00000000-0000-4000-8000-000000000001`, { headers: auth })).status).toBe(404);
  expect((await fetch(`${gateway.base}/no/such/route/00000000-0000-4000-8000-000000000002`)).status).toBe(404);
  const created = await fetch(`${gateway.base}/api/playground/images`, { method: 'POST', headers: auth, body: JSON.stringify({ prompts: ['a red fox'] }) });
  jobId = ((await created.json()) as { jobId: string }).jobId;
  await until(async () => ((await (await fetch(`${gateway.base}/api/playground/images/${jobId}`, { headers: auth })).json()) as { status: string }).status === 'completed');
});

afterAll(async () => {
  prometheus?.kill('SIGTERM');
  worker?.kill('SIGTERM');
  await worker?.exited;
  await gateway?.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The sample's value in Prometheus text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('METRICS_PORT', () => {
  it('serves nothing on the API port', async () => {
    const res = await fetch(`${gateway.base}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toMatch(/http_requests_total/);
  });

  it('gateway and worker output passes `promtool check metrics`', async () => {
    for (const url of [gatewayMetrics, workerMetrics]) {
      const text = await scrape(url);
      const checked = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ url, status: checked.status, out: checked.stdout + checked.stderr }).toEqual({ url, status: 0, out: '' });
    }
  });

  it('counts requests under route templates, never ids; unmatched routes share one label', async () => {
    const text = await scrape(gatewayMetrics);
    expect(sample(text, 'http_requests_total{method="POST",route="/api/playground/query",status_code="200"}')).toBe(LOOKUPS);
    expect(sample(text, 'http_requests_total{method="GET",route="/api/playground/images/:jobId",status_code="404"}')).toBe(1);
    const unmatched = 'http_requests_total{method="GET",route="unmatched",status_code="404"}';
    const before = sample(text, unmatched)!;
    expect(before).toBeGreaterThanOrEqual(1);
    expect((await fetch(`${gateway.base}/another/unknown/route/${'x'.repeat(40)}`)).status).toBe(404);
    expect(sample(await scrape(gatewayMetrics), unmatched)).toBe(before + 1);
    expect(text).toMatch(/^http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/api\/playground\/query",status_code="200"\} \d+$/m);
    expect(text).not.toMatch(/00000000-0000-4000-8000|[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}/);
  });

  it('the gateway counts the charges it decided; the worker the images, the job and its state', async () => {
    const g = await scrape(gatewayMetrics);
    expect(sample(g, 'credits_charged_total{service="definitions"}')).toBe(LOOKUPS);
    expect(sample(g, 'credits_charged_total{service="images"}')).toBe(1);
    expect(sample(g, 'credits_refunded_total{service="images"}')).toBe(0);
    expect(sample(g, 'database_up')).toBe(1);
    expect(sample(g, 'image_queue_depth')).toBe(0);
    expect(sample(g, 'websocket_connections')).toBe(0);
    expect(sample(g, 'rate_limited_requests_total')).toBe(0);
    const w = await scrape(workerMetrics);
    expect(sample(w, 'images_generated_total{outcome="succeeded"}')).toBe(1);
    expect(sample(w, 'image_jobs_finished_total{status="completed"}')).toBe(1);
    expect(sample(w, 'image_generation_duration_seconds_count')).toBe(1);
    expect(sample(w, 'webhook_deliveries_total{outcome="delivered"}')).toBe(0);
    expect(sample(w, 'database_up')).toBe(1);
    // Node's process metrics, without the gauges named like counters.
    expect(w).toMatch(/^process_cpu_seconds_total \d/m);
    expect(w).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(w).not.toMatch(/^nodejs_active_(handles|requests|resources)_total/m);
  });

  it('a GraphQL operation is counted by type and outcome', async () => {
    const post = (query: string) =>
      fetch(`${gateway.base}/graphql`, { method: 'POST', headers: { Authorization: `Bearer ${gateway.key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ query }) });
    expect((await post('{ me { credits } }')).status).toBe(200);
    expect((await post('{ nosuchfield }')).status).toBe(400);
    const text = await scrape(gatewayMetrics);
    expect(sample(text, 'graphql_operations_total{type="query",outcome="ok"}')).toBe(1);
    expect(sample(text, 'graphql_operations_total{type="mutation",outcome="ok"}')).toBe(0);
    expect(sample(text, 'graphql_operations_total{type="unknown",outcome="error"}')).toBe(1);
  });

  it('a real Prometheus scrapes both: targets up, and the lookups counted', async () => {
    const port = await freePort();
    const hostPort = (url: string) => new URL(url).host;
    const config = path.join(scratch, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: gateway',
        `    static_configs: [{ targets: ['${hostPort(gatewayMetrics)}'] }]`,
        '  - job_name: worker',
        `    static_configs: [{ targets: ['${hostPort(workerMetrics)}'] }]`,
        '',
      ].join('\n'),
    );
    prometheus = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${path.join(scratch, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    prometheus.stderr!.on('data', (c) => (log += c));
    const api = `http://127.0.0.1:${port}/api/v1`;
    const query = async (q: string) => {
      const res = await fetch(`${api}/query?query=${encodeURIComponent(q)}`);
      return ((await res.json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } }).data.result;
    };
    await until(async () => {
      const up = await query('up').catch(() => []);
      return up.length === 2 && up.every((r) => r.value[1] === '1');
    }).catch((err: unknown) => {
      throw new Error(`${String(err)}\nprometheus log:\n${log}`);
    });
    const targets = (await query('up')).map((r) => r.metric.job).sort();
    expect(targets).toEqual(['gateway', 'worker']);
    const charged = await query('credits_charged_total{service="definitions"} > 0');
    expect(charged.map((r) => [r.metric.job, Number(r.value[1])])).toEqual([['gateway', LOOKUPS]]);
    const finished = await query('sum(image_jobs_finished_total{status="completed"})');
    expect(Number(finished[0]!.value[1])).toBe(1);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
