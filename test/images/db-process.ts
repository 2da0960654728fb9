import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/**
 * The embedded database in its own process (`npm run db`'s entry point, run as `node --import tsx/esm`
 * so the pid is the server itself and kill -9 takes it down at once), persisting to `dbPath`.
 * Tests that kill the database start their own instead of sharing the suite's.
 */
export interface DbProcess {
  proc: ChildProcess;
  uri: string;
  port: number;
  exited: Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Starts the server on `port` (0: any free port) and resolves once it accepts connections. */
export function startDbProcess(dbPath: string, port = 0): Promise<DbProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx/esm', 'packages/embedded-mongo/src/cli.ts', `--port=${port}`, `--dbpath=${dbPath}`], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /MONGODB_URI=(mongodb:\/\/[^\s/]+:(\d+)\/)/.exec(out);
      if (m) {
        proc.stdout!.off('data', onData);
        // Keep draining the pipes: a full pipe would block the server.
        proc.stdout!.resume();
        resolve({ proc, uri: m[1], port: Number(m[2]), exited, kill: (signal) => proc.kill(signal) });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then(() => reject(new Error(`database exited before accepting connections:\n${out}`)));
  });
}
