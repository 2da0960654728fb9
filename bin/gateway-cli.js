#!/usr/bin/env node
// Admin CLI entry for `npx gateway-cli …` / the package's bin: the compiled dist/src/cli/main.js when
// the build exists (production installs have no tsx), otherwise src/cli/main.ts through tsx.
/* global process, URL */
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
let runCli;
if (existsSync(compiled)) {
  ({ runCli } = await import(compiled.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ runCli } = await import('../src/cli/main.ts'));
}
const code = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
});
process.exit(code);
