#!/usr/bin/env node
// `npm run build`: compiles src/ and workers/ with tsconfig.build.json into dist/ (JavaScript and
// source maps), then copies the files the compiled code reads beside itself (the console's assets, the
// API reference's stylesheet). Starts from an empty folder, so nothing stale is shipped.
// `--out-dir DIR` builds elsewhere (the tests build into a scratch folder).
/* global process */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const at = process.argv.indexOf('--out-dir');
const outDir = path.resolve(at > 0 ? process.argv[at + 1] : path.join(root, 'dist'));

/** Files read at run time through import.meta.url, relative to the module that reads them. */
const ASSETS = ['src/console/assets', 'src/http/openapi/docs-contrast.css'];

rmSync(outDir, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', outDir], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
for (const asset of ASSETS) {
  mkdirSync(path.dirname(path.join(outDir, asset)), { recursive: true });
  cpSync(path.join(root, asset), path.join(outDir, asset), { recursive: true });
}
process.stdout.write(`built ${path.relative(process.cwd(), outDir) || '.'}\n`);
