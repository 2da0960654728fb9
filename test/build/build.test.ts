import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The compiled build (`npm run build`), built once into a scratch folder inside the checkout (so the
// compiled code resolves node_modules as dist/ does), then run with plain node: no tsx.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let out: string;

function compiledFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => path.join(e.parentPath, e.name));
}

function node(script: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: out, env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
}

beforeAll(() => {
  out = mkdtempSync(path.join(root, 'node_modules/.cache-build-test-'));
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--out-dir', out], { cwd: root, encoding: 'utf8' });
  expect(built.stderr + built.stdout).not.toMatch(/error TS/);
  expect(built.status).toBe(0);
});

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('npm run build', () => {
  it('compiles the gateway, worker and CLI entries with source maps', () => {
    for (const entry of ['src/main.js', 'workers/main.js', 'src/cli/main.js']) {
      expect(existsSync(path.join(out, entry))).toBe(true);
      expect(existsSync(path.join(out, `${entry}.map`))).toBe(true);
    }
  });

  it('copies every file the compiled code reads beside itself (console assets, API reference stylesheet)', () => {
    const read = [...compiledFiles(out).flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/new URL\('(\.{1,2}\/[^']+)', import\.meta\.url\)/g)].map((m) => path.resolve(path.dirname(file), m[1]!)))];
    // The console's three assets and the reference's stylesheet at least.
    expect(read.length).toBeGreaterThanOrEqual(4);
    const missing = read.filter((file) => !existsSync(file)).map((file) => path.relative(out, file));
    expect(missing).toEqual([]);
  });

  it('imports neither tsx nor the embedded database (both development dependencies)', () => {
    const offending = compiledFiles(out).filter((file) =>
      /(?:from\s*|import\s*\(\s*|import\s+)['"](?:tsx|@credit-gateway\/embedded-mongo)(?:\/[^'"]*)?['"]/.test(readFileSync(file, 'utf8')),
    );
    expect(offending.map((file) => path.relative(out, file))).toEqual([]);
  });

  it('prints a GraphQL schema byte-identical to schema.graphql (explicit type functions survive compilation)', () => {
    const printed = node(`const m = await import('./src/graphql/schema.js'); process.stdout.write(m.printSchemaFile(await m.buildGraphQLSchema()));`);
    expect(printed.stderr).toBe('');
    expect(printed.stdout).toBe(readFileSync(path.join(root, 'schema.graphql'), 'utf8'));
  });

  it('reads the version from package.json (the OpenAPI document says it)', () => {
    const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    const printed = node(`const m = await import('./src/version.js'); process.stdout.write(m.VERSION);`);
    expect(printed.stdout).toBe(version);
  });

  it('with NODE_ENV=production and no MONGODB_URI the compiled gateway refuses to start, naming the variable, and starts no database', async () => {
    const child = spawn(process.execPath, ['src/main.js'], {
      cwd: out,
      env: { PATH: process.env.PATH, NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://api.example.com', SMTP_URL: 'smtp://mail.example.com', PORT: '0', DATA_DIR: path.join(out, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(1);
    expect(stderr).toBe('Invalid configuration:\n  MONGODB_URI: is required when NODE_ENV=production (the embedded database is for development and tests only; use a MongoDB replica set)\n');
    expect(stdout).not.toMatch(/embedded database/);
    expect(existsSync(path.join(out, 'data'))).toBe(false);
  });
});
