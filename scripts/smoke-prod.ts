/**
 * Production smoke test (`npx tsx scripts/smoke-prod.ts`; CI runs it after `npm run build`): the
 * Dockerfile's runtime stage done outside a container. In a scratch folder: the manifests, the lockfile
 * and the build, then `npm ci --omit=dev` (no TypeScript tooling, no embedded database); then the built
 * gateway and worker (plain node, NODE_ENV=production) against the embedded database started from this
 * checkout (a dev dependency); the admin CLI's bin makes an account and a key; the gateway answers
 * /readyz, one lookup and one image job that the worker completes; SIGTERM stops both cleanly.
 * Builds first when dist/ is missing. Deadlines are generous and every wait is a poll: CI is busy.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** What the runtime stage copies (the Dockerfile's COPY lines say the same). */
const RUNTIME_FILES = ['package.json', 'package-lock.json', 'packages/embedded-mongo/package.json', 'bin', 'dist', 'deploy/entrypoint.sh'];
/** Packages that must not be in a production install. */
const DEV_ONLY = ['tsx', 'typescript', 'vitest', 'esbuild', '@credit-gateway/embedded-mongo'];
const MINUTE = 60_000;

const children: ChildProcess[] = [];
let scratch: string | undefined;

function step(message: string): void {
  process.stdout.write(`[smoke] ${message}\n`);
}

function fail(message: string): never {
  throw new Error(message);
}

/** Starts a process whose output is echoed with a prefix; resolves `waitFor` on the first matching line. */
function start(name: string, command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      process.stdout.write(`  [${name}] ${line}\n`);
      for (const w of waiters.splice(0)) {
        const m = line.match(w.re);
        if (m) w.resolve(m);
        else waiters.push(w);
      }
    });
  }
  const waitFor = (re: RegExp, what: string, ms = 3 * MINUTE) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      for (const line of lines) {
        const m = line.match(re);
        if (m) return resolve(m);
      }
      const timer = setTimeout(() => reject(new Error(`${name}: no ${what} within ${ms / 1000} s`)), ms);
      waiters.push({ re, resolve: (m) => (clearTimeout(timer), resolve(m)) });
      void exited.then((code) => reject(new Error(`${name} exited (${code}) before ${what}`)));
    });
  return { child, waitFor, exited };
}

/** Polls until `check` returns a value (not undefined), or fails with `what` after `ms`. */
async function poll<T>(what: string, check: () => Promise<T | undefined>, ms = 3 * MINUTE): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) fail(`${what}: not within ${ms / 1000} s${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) fail(`${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

async function main(): Promise<void> {
  if (!existsSync(path.join(root, 'dist/src/main.js'))) {
    step('no dist/: npm run build');
    run('npm', ['run', 'build'], root);
  }

  scratch = mkdtempSync(path.join(os.tmpdir(), 'gateway-smoke-'));
  step(`runtime install in ${scratch}`);
  for (const file of RUNTIME_FILES) {
    mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
    cpSync(path.join(root, file), path.join(scratch, file), { recursive: true });
  }
  // --workspaces=false: the workspace (the embedded database) is for development only.
  run('npm', ['ci', '--omit=dev', '--workspaces=false', '--no-audit', '--no-fund', '--prefer-offline'], scratch);
  for (const pkg of DEV_ONLY) {
    if (existsSync(path.join(scratch, 'node_modules', pkg))) fail(`${pkg} is in the production install: it must be a devDependency`);
  }

  step('embedded database from the development checkout');
  const db = start('db', process.execPath, ['--import', 'tsx/esm', 'packages/embedded-mongo/src/cli.ts', '--port=0'], { cwd: root, env: process.env });
  const [, dbUri] = await db.waitFor(/MONGODB_URI=(\S+)/, 'MONGODB_URI line');
  const env: NodeJS.ProcessEnv = {
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    MONGODB_URI: `${dbUri!.replace(/\/?$/, '/')}smoke`,
    HOST: '127.0.0.1',
    PORT: '0',
    ALLOWED_HOSTS: '127.0.0.1',
    // Required in production; nothing is sent in this test (no sign-up), so nothing listens there.
    SMTP_URL: 'smtp://127.0.0.1:1',
    IN_PROCESS_WORKER: 'false',
    LOG_LEVEL: 'warn',
    METRICS_PORT: '0',
  };

  // Every process through the image's entrypoint, as the container runs it (node first on PATH).
  const entrypoint = ['deploy/entrypoint.sh'];
  step('admin CLI (the entrypoint\'s cli: bin/gateway-cli.js on the build): an account and a key');
  const account = JSON.parse(run('sh', [...entrypoint, 'cli', 'account', 'create', '--name', 'smoke', '--credits', '10'], scratch, env)) as { accountId: string };
  const { key } = JSON.parse(run('sh', [...entrypoint, 'cli', 'key', 'create', '--account', account.accountId, '--name', 'smoke'], scratch, env)) as { key: string };

  step('built gateway and worker');
  const gateway = start('gateway', 'sh', [...entrypoint, 'gateway'], { cwd: scratch, env });
  const worker = start('worker', 'sh', [...entrypoint, 'worker'], { cwd: scratch, env: { ...env, LOG_LEVEL: 'info' } });
  const [, base] = await gateway.waitFor(/Gateway listening on (http:\/\/\S+) /, 'listening line');
  const [, gatewayMetrics] = await gateway.waitFor(/^Metrics on (\S+)\.$/, 'metrics line');
  const [, workerMetricsPort] = await worker.waitFor(/"port":(\d+),"msg":"metrics listening"/, 'metrics line');

  await poll('GET /readyz → 200', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined));
  step('ready');
  // `exec node` in the entrypoint: the process started as sh is now node itself (PID 1 in a container).
  for (const [name, proc] of [['gateway', gateway], ['worker', worker]] as const) {
    const comm = readFileSync(`/proc/${proc.child.pid}/comm`, 'utf8').trim();
    if (comm !== 'node') fail(`${name}: the entrypoint left "${comm}" in front of node (exec missing?)`);
  }

  const auth = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const lookup = await fetch(`${base}/api/playground/query`, { method: 'POST', headers: auth, body: JSON.stringify({ keyword: 'serendipity' }) });
  const definition = (await lookup.json()) as { keyword?: string; definition?: string; credits?: number };
  if (lookup.status !== 200 || definition.keyword !== 'serendipity' || !definition.definition || definition.credits !== 9) {
    fail(`lookup: ${lookup.status} ${JSON.stringify(definition)}`);
  }
  step(`lookup: ${definition.definition.slice(0, 60)}…`);

  const created = await fetch(`${base}/api/playground/images`, { method: 'POST', headers: auth, body: JSON.stringify({ prompts: ['a lighthouse at dusk'] }) });
  const { jobId } = (await created.json()) as { jobId?: string };
  if (created.status >= 300 || !jobId) fail(`image job: ${created.status}`);
  const job = await poll(`image job ${jobId} completed by the worker`, async () => {
    const res = await fetch(`${base}/api/playground/images/${jobId}`, { headers: auth });
    const body = (await res.json()) as { status: string; images: { url: string | null }[] };
    if (body.status === 'failed' || body.status === 'canceled') fail(`image job ended ${body.status}: ${JSON.stringify(body)}`);
    return body.status === 'completed' ? body : undefined;
  });
  const image = await fetch(job.images[0]!.url!);
  if (image.status !== 200 || !image.headers.get('content-type')?.startsWith('image/')) fail(`image URL: ${image.status} ${image.headers.get('content-type')}`);
  step('image job completed; its image is served');

  // prom-client is a production dependency: both serve metrics, counted where the domain decided.
  const gatewayText = await (await fetch(gatewayMetrics!)).text();
  if (!/^credits_charged_total\{service="definitions"\} 1$/m.test(gatewayText)) fail(`gateway metrics: no charged lookup in\n${gatewayText.slice(0, 2000)}`);
  const workerText = await (await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`)).text();
  if (!/^image_jobs_finished_total\{status="completed"\} 1$/m.test(workerText)) fail(`worker metrics: no completed job in\n${workerText.slice(0, 2000)}`);
  step('metrics: the lookup charged (gateway), the job completed (worker)');

  // `exec` in the entrypoint: the pid signalled is node's, and node's handlers drain and exit 0.
  step('SIGTERM: both exit 0');
  gateway.child.kill('SIGTERM');
  worker.child.kill('SIGTERM');
  const codes = await Promise.all([gateway.exited, worker.exited]);
  if (codes.some((c) => c !== 0)) fail(`exit codes after SIGTERM: gateway ${codes[0]}, worker ${codes[1]}`);
  step('passed');
}

try {
  await main();
} catch (err) {
  process.stderr.write(`[smoke] FAILED: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}
