/**
 * With MONGODB_URI unset, `npm run cli` and `npm run worker` find the embedded database that
 * `npm start` runs from DATA_DIR/db: the running gateway writes the server's address to a file there
 * (marked stopped when it stops), and they check that the server is alive. Across a restart of the
 * gateway (a clean one and a crash) no address is copied anywhere; the restarted server takes the same
 * port again, and a worker started after it finds it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { startGatewayProcess, type GatewayProcess } from '../gateway/gateway-process.js';

const dirs: string[] = [];
const running = new Set<GatewayProcess>();
const workers = new Set<ChildProcess>();

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  for (const g of running) await g.dispose();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function cli(dataDir: string, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => (stderr += t), env: { DATA_DIR: dataDir } });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

async function gateway(dataDir: string, demoKey: boolean): Promise<GatewayProcess> {
  const g = await startGatewayProcess({ IN_PROCESS_WORKER: 'false', LOG_LEVEL: 'warn' }, { dataDir, demoKey });
  running.add(g);
  return g;
}

async function stop(g: GatewayProcess, signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null> {
  g.child.kill(signal);
  const code = await g.closed;
  running.delete(g);
  return code;
}

interface Worker {
  /** Resolves once it processes jobs; rejects with its output when it exits first. */
  started: Promise<void>;
  exited: Promise<{ code: number | null; output: string }>;
  child: ChildProcess;
  /** Resolves with the first stdout line from now on that contains `text`. */
  next(text: string): Promise<string>;
}

/** `npm run worker` with no MONGODB_URI. */
function startWorker(dataDir: string): Worker {
  const environment: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  delete environment.MONGODB_URI;
  const child = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  workers.add(child);
  let output = '';
  child.stderr!.on('data', (c) => (output += c));
  const exited = new Promise<{ code: number | null; output: string }>((r) => child.once('close', (code) => (workers.delete(child), r({ code, output }))));
  const waiting: { text: string; resolve: (line: string) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    output += `${line}\n`;
    for (const w of waiting.filter((w) => line.includes(w.text))) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(line);
    }
  });
  const next = (text: string) =>
    Promise.race([new Promise<string>((resolve) => waiting.push({ text, resolve })), exited.then(({ code }) => Promise.reject(new Error(`worker exited (${code}) before "${text}":\n${output}`)))]);
  const started = next('image worker started').then(() => undefined);
  started.catch(() => undefined);
  return { started, exited, child, next };
}

describe('with MONGODB_URI unset', () => {
  // Four gateway starts and three workers, one after another, on a machine that may be busy.
  it('the CLI and the worker find the database of npm start, also after it restarted; when none runs they say so', { timeout: 360_000 }, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'embedded-find-'));
    dirs.push(dataDir);
    const addressFile = path.join(dataDir, 'db', 'embedded-server.json');

    // Nothing started yet: a clear answer at once, not a connection timeout.
    const none = await cli(dataDir, 'key', 'list', '--account', '0'.repeat(24));
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`no embedded database is running from ${path.join(dataDir, 'db')}`);
    expect(none.stderr).not.toMatch(/ECONNREFUSED|\n\s+at /);

    const first = await gateway(dataDir, true);
    const written = JSON.parse(await readFile(addressFile, 'utf8')) as { uri: string; pid: number };
    expect(written.pid).toBe(first.child.pid);
    expect(written.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
    // A second npm start on the same files would be a second server writing them: refused, saying why.
    const twice = await gateway(dataDir, false).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(twice).toContain(`an embedded database already runs from ${path.join(dataDir, 'db')}`);
    expect(twice).not.toMatch(/\n\s+at /);
    expect(JSON.parse(await readFile(addressFile, 'utf8'))).toMatchObject({ pid: first.child.pid });

    const created = await cli(dataDir, 'account', 'create', '--name', 'Across restarts', '--credits', '5');
    expect(created.code, created.stderr).toBe(0);
    const { accountId } = created.json() as { accountId: string };
    // A worker started now finds it too.
    const worker = startWorker(dataDir);
    await worker.started;
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);

    // A clean stop marks the address stopped: the CLI says nothing runs.
    expect(await stop(first, 'SIGTERM')).toBe(0);
    expect(JSON.parse(await readFile(addressFile, 'utf8'))).toMatchObject({ uri: written.uri, pid: null });
    const stopped = await cli(dataDir, 'credits', 'grant', '--account', accountId, '--amount', '1');
    expect(stopped.code).toBe(2);
    expect(stopped.stderr).toContain('no embedded database is running');
    expect(stopped.stderr).toContain('npm start');

    // Restarted: found again, with the same data, at the same address.
    const second = await gateway(dataDir, false);
    expect(JSON.parse(await readFile(addressFile, 'utf8'))).toMatchObject({ uri: written.uri, pid: second.child.pid });
    const granted = await cli(dataDir, 'credits', 'grant', '--account', accountId, '--amount', '1');
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.json()).toEqual({ accountId, credits: 6 });
    const fresh = startWorker(dataDir);
    await fresh.started;
    fresh.child.kill('SIGTERM');
    expect((await fresh.exited).code).toBe(0);

    // A crash leaves the file behind: its process is gone, so it is not believed.
    await stop(second, 'SIGKILL');
    expect(existsSync(addressFile)).toBe(true);
    const crashed = await cli(dataDir, 'credits', 'grant', '--account', accountId, '--amount', '1');
    expect(crashed.code).toBe(2);
    expect(crashed.stderr).toContain('no embedded database is running');
    const orphan = startWorker(dataDir);
    const ended = await orphan.exited;
    expect(ended.code).not.toBe(0);
    expect(ended.output).toContain('no embedded database is running');

    // The next start takes over the stale file (and the port) and is found.
    const third = await gateway(dataDir, false);
    expect(JSON.parse(await readFile(addressFile, 'utf8'))).toMatchObject({ uri: written.uri, pid: third.child.pid });
    const last = await cli(dataDir, 'credits', 'grant', '--account', accountId, '--amount', '1');
    expect(last.json()).toEqual({ accountId, credits: 7 });
    expect(await stop(third, 'SIGTERM')).toBe(0);
  });
});
