/**
 * The gateway as `npm start` runs it, in a child process: `node --import tsx src/main.ts` with the
 * embedded database in a temporary DATA_DIR. For tests of what only a real process shows (signals,
 * exit codes, the listening socket).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface GatewayProcess {
  child: ChildProcess;
  /** Every stdout line so far (startup messages, then JSON log lines). */
  lines: string[];
  base: string;
  port: number;
  /** The demo account's key (printed once on an empty database). */
  key: string;
  /** Resolves with the first stdout line matching `re` (already printed or still to come). */
  line(re: RegExp): Promise<string>;
  /** Resolves with the exit code once the process has exited and all of its output has been read. */
  closed: Promise<number | null>;
  stderr(): string;
  /** SIGKILL if still running, and removes the data directory (unless it was given). */
  dispose(): Promise<void>;
}

/**
 * `env.MONGODB_URI` set: the gateway uses that database instead of an embedded one. `demoKey: false`:
 * do not wait for a demo key (the database may not be empty, or another instance seeds it); `key` is ''.
 * `dataDir`: the embedded database's DATA_DIR, kept by dispose (a restart on the same files); by
 * default a new temporary one, removed by dispose.
 */
export async function startGatewayProcess(env: Record<string, string> = {}, opts: { demoKey?: boolean; dataDir?: string } = {}): Promise<GatewayProcess> {
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(tmpdir(), 'gateway-proc-')));
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    // NODE_ENV as a newcomer has it (vitest sets `test`, under which some libraries skip their signal handlers).
    NODE_ENV: 'development',
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...env,
  };
  if (!env.MONGODB_URI) delete environment.MONGODB_URI;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const dispose = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await closed;
    if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const base = /^Gateway listening on (\S+) /.exec(await line(/^Gateway listening on /))![1]!;
    const key = opts.demoKey === false ? '' : /^\s+(wi_live_[0-9a-f]{64})$/.exec(await line(/^\s+wi_live_/))![1]!;
    return { child, lines, base, port: Number(new URL(base).port), key, line, closed, stderr: () => stderr, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
