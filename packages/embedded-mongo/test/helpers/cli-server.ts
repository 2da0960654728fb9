import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's command-line entry point (`npm run db` at the repository root). */
export const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.ts');

/**
 * Starts the CLI with `args` as one node process (tsx loaded in it, so a signal reaches the server
 * itself) and resolves with its URI once it prints that it listens. The child is added to `children`,
 * for the file's afterAll to kill whatever is left.
 */
export function startCliServer(args: string[], children: ChildProcess[]): Promise<{ child: ChildProcess; uri: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx/esm', CLI, '--port=0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /MONGODB_URI=(\S+)/.exec(out);
      if (m) resolve({ child, uri: m[1] });
    });
    child.once('exit', (code, sig) => reject(new Error(`server exited before it listened (${code ?? sig})`)));
  });
}

/** Sends `sig` and waits until the process has exited (at once if it already has). */
export async function stopProcess(child: ChildProcess, sig: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill(sig);
  await gone;
}
