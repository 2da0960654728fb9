#!/usr/bin/env node
// Admin CLI entry for `npx gateway-cli …` / the package's bin: runs src/cli/main.ts through tsx.
/* global process */
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/main.ts');
const code = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
});
process.exit(code);
