import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/**
 * A standalone worker (`workers/main.ts`) in its own process, run as `node --import tsx` so the pid is
 * the worker itself (kill -9 hits it, not an npx wrapper).
 */
export interface WorkerProcess {
  proc: ChildProcess;
  /** Resolves when the worker logged that it started. */
  ready: Promise<void>;
  exited: Promise<number | null>;
  output(): string;
  kill(signal: NodeJS.Signals): void;
}

const ROOT = path.resolve(import.meta.dirname, '../..');

export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('image worker started')) resolve();
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) => reject(new Error(`worker exited (${code}) before starting:\n${out}`)));
  });
  ready.catch(() => undefined);
  return { proc, ready, exited, output: () => out, kill: (signal) => proc.kill(signal) };
}

/** A response body as loosely typed JSON, for assertions. */
export async function readJson(res: Response): Promise<any> {
  return res.json();
}
