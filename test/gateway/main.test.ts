import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm start` as a newcomer runs it: no MONGODB_URI, so the embedded database persists in DATA_DIR;
 * an empty database gets a demo account whose key is printed once; SIGTERM exits cleanly.
 */
const children = new Set<ChildProcess>();
let dataDir: string;

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  lines: string[];
  base: string;
  /** Resolves with the first stdout line matching `re` (already printed or still to come). */
  line(re: RegExp): Promise<string>;
  /** Resolves once the process has exited and all of its output has been read. */
  closed: Promise<number | null>;
}

async function startGateway(env: Record<string, string>): Promise<Started> {
  const environment: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete environment.MONGODB_URI;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const lines: string[] = [];
  const waiting: { re: RegExp; resolve: (line: string) => void }[] = [];
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  // 'close' comes after the last stdout line has been read ('exit' may come before).
  const closed = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  const gone = closed.then(() => Promise.reject(new Error(`gateway exited: ${stderr}\n${lines.join('\n')}`)));
  gone.catch(() => undefined);
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const w of waiting.filter((w) => w.re.test(line))) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(line);
    }
  });
  const line = (re: RegExp): Promise<string> => {
    const seen = lines.find((l) => re.test(l));
    const found = seen !== undefined ? Promise.resolve(seen) : new Promise<string>((resolve) => waiting.push({ re, resolve }));
    return Promise.race([found, gone]);
  };
  const base = /^Gateway listening on (\S+) /.exec(await line(/^Gateway listening on /))![1]!;
  return { child, lines, base, line, closed };
}

async function stop(started: Started): Promise<number | null> {
  started.child.kill('SIGTERM');
  const code = await started.closed;
  children.delete(started.child);
  return code;
}

// NODE_ENV as a newcomer has it (vitest sets `test`, under which some libraries skip their signal handlers).
const env = () => ({ NODE_ENV: 'development', PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', IN_PROCESS_WORKER: 'false' });

describe('npm start', () => {
  it('starts the embedded database, prints a demo key once, persists, and stops on SIGTERM', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gateway-start-'));
    const first = await startGateway(env());
    // The demo key is printed after the "listening" line.
    const key = /^\s+(wi_live_[0-9a-f]{64})$/.exec(await first.line(/^\s+wi_live_/))?.[1];
    const output = first.lines.join('\n');
    expect(output).toMatch(/MONGODB_URI is not set: started the embedded database at mongodb:\/\/127\.0\.0\.1:\d+\/gateway/);
    expect(key, output).toBeDefined();

    const call = async (base: string) => {
      const res = await fetch(`${base}/api/playground/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ keyword: 'serendipity' }),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const r1 = await call(first.base);
    expect(r1).toMatchObject({ status: 200, body: { keyword: 'serendipity', credits: 99 } });
    expect((await fetch(`${first.base}/readyz`)).status).toBe(200);
    expect(await stop(first)).toBe(0);

    // Second start on the same data: no new demo account, the balance survived.
    const second = await startGateway(env());
    const r2 = await call(second.base);
    expect(r2).toMatchObject({ status: 200, body: { credits: 98 } });
    expect(await stop(second)).toBe(0);
    // All of its output has been read by now.
    expect(second.lines.join('\n')).not.toMatch(/wi_live_/);
  });

  it('refuses an invalid configuration with a message naming the variable', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, PORT: 'eighty' }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stderr = '';
    child.stderr!.on('data', (c) => (stderr += c));
    const code = await new Promise((r) => child.once('exit', r));
    expect(code).toBe(1);
    expect(stderr).toMatch(/Invalid configuration:\n\s+PORT: /);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
