import { spawn } from 'node:child_process';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { buildAdminServices } from '../../src/cli/services.js';

/**
 * The CLI as a process writing into a pipe: its output is complete however slowly the reader takes it
 * (it used to exit as soon as the command returned, dropping all the pipe had not taken yet), and its
 * exit code still says whether the command failed.
 */
const dbName = `t_cli_output_${process.pid}`;
let uri: string;
let accountId: string;
/** The export as the command produces it in process (no pipe). */
let expected: string;
const GRANTS = 1500;

beforeAll(async () => {
  uri = inject('mongoUri').replace(/\/?$/, `/${dbName}`);
  const connection = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 5000 }).asPromise();
  try {
    const services = await buildAdminServices({ connection, host: 'test' });
    const actor = { actor: 'test', ip: '127.0.0.1', host: 'test' };
    accountId = (await services.credits.createAccount('exported', 0, actor)).id;
    for (let i = 0; i < GRANTS; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => services.credits.grant(accountId, 1, `grant:${i + j}`, actor)));
    }
    await services.close();
  } finally {
    await connection.close();
  }
  let out = '';
  const code = await runCli(['audit', 'export', '--account', accountId], { stdout: (t) => void (out += t), stderr: () => {}, env: { MONGODB_URI: uri } });
  expect(code).toBe(0);
  expected = out;
}, 120_000);

afterAll(async () => {
  const connection = await mongoose.createConnection(uri).asPromise();
  await connection.dropDatabase();
  await connection.close();
});

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * Runs the CLI with its stdout on a pipe read slowly: nothing for half a second, then one chunk at a
 * time with a pause after each, so most of the output still waits in the process when the command is
 * done. (A 'data' listener, not read(): once the process exits, Node resumes its pipes, and data no
 * listener takes is dropped.)
 */
function runSlowlyRead(entry: string[], argv: string[], opts: { stopAfterBytes?: number } = {}): Promise<Run> {
  const child = spawn(process.execPath, [...entry, ...argv], { env: { ...process.env, MONGODB_URI: uri }, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  let received = 0;
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
  child.stdout.pause();
  child.stdout.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
    if (opts.stopAfterBytes !== undefined && received >= opts.stopAfterBytes) return void child.stdout.destroy();
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), 20);
  });
  setTimeout(() => child.stdout.resume(), 500);
  // The pipe is read to its end (or given up) and the process has exited.
  const drained = new Promise((resolve) => child.stdout.once('close', resolve));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return Promise.all([exited, drained]).then(([code]) => ({ code, stdout: Buffer.concat(chunks), stderr }));
}

const ENTRIES: [string, string[]][] = [
  ['npm run cli (src/cli/main.ts)', ['--import', 'tsx', 'src/cli/main.ts']],
  ['the bin', ['bin/gateway-cli.js']],
];

describe('CLI output on a pipe', () => {
  it('the export is larger than a pipe holds', () => {
    expect(Buffer.byteLength(expected)).toBeGreaterThan(256 * 1024);
    expect(expected.trim().split('\n')).toHaveLength(GRANTS + 1);
  });

  it.each(ENTRIES)('%s: an export read slowly through a pipe arrives whole, exit 0', async (_name, entry) => {
    const run = await runSlowlyRead(entry, ['audit', 'export', '--account', accountId]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.length).toBe(Buffer.byteLength(expected));
    expect(run.stdout.toString()).toBe(expected);
  });

  it.each(ENTRIES)('%s: a failing command still exits non-zero with its message, nothing on stdout', async (_name, entry) => {
    const run = await runSlowlyRead(entry, ['audit', 'export', '--account', 'f'.repeat(24)]);
    expect(run.code).toBe(1);
    expect(run.stdout.length).toBe(0);
    expect(run.stderr).toBe('error: account must be the id of an existing account\n');
  });

  it('a reader that goes away before the end makes the export fail (exit 1), with one clear line and no stack trace', async () => {
    const run = await runSlowlyRead(ENTRIES[0]![1], ['audit', 'export', '--account', accountId], { stopAfterBytes: 1 });
    expect(run.code).toBe(1);
    expect(run.stdout.length).toBeLessThan(Buffer.byteLength(expected));
    expect(run.stderr).toMatch(/^error: standard output was closed before everything was written \(EPIPE\): the output is incomplete\n$/);
  });
});
