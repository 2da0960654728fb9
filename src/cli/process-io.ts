/**
 * The CLI's standard streams as a process has them. Writing to a pipe is asynchronous: what the reader
 * has not taken yet waits in the process, and `process.exit()` drops it (an export cut off at the
 * pipe's 64 KiB, with exit code 0). So writes wait for the reader when it lags (which also bounds the
 * memory of a long export), and the process exits only after both streams have flushed. A reader that
 * goes away before the end (EPIPE) makes the command fail: the output is incomplete.
 */
import type { Writable } from 'node:stream';

export interface ProcessOutput {
  /** Writes; resolves when more may be written. Throws once the reader has gone. */
  stdout(text: string): Promise<void> | undefined;
  stderr(text: string): void;
  /** Flushes both streams, then ends the process with `code` (1 if the output was lost on the way). */
  exit(code: number): Promise<never>;
}

export class OutputClosedError extends Error {
  override readonly name = 'OutputClosedError';
  constructor(cause: unknown) {
    super(`standard output was closed before everything was written (${(cause as NodeJS.ErrnoException)?.code ?? String(cause)}): the output is incomplete`, { cause });
  }
}

export function processOutput(out: Writable = process.stdout, err: Writable = process.stderr): ProcessOutput {
  let lost: unknown;
  // Without a listener an EPIPE would be thrown as an uncaught exception, with a stack trace.
  out.on('error', (e: unknown) => (lost ??= e));
  err.on('error', () => {});
  return {
    stdout(text) {
      if (lost) throw new OutputClosedError(lost);
      return out.write(text) ? undefined : drained(out);
    },
    stderr(text) {
      err.write(text);
    },
    async exit(code) {
      await flushed(out);
      if (lost && code === 0) {
        err.write(`error: ${new OutputClosedError(lost).message}\n`);
        code = 1;
      }
      await flushed(err);
      process.exit(code);
    },
  };
}

/** Resolves when the stream wants more, or can take no more (closed after an error). */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/** Resolves once everything written before has been handed to the operating system (or failed). */
function flushed(stream: Writable): Promise<void> {
  if (stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => stream.write('', () => resolve()));
}
