#!/usr/bin/env node
// Admin CLI entry for `npx gateway-cli …` / the package's bin: the compiled dist/src/cli/main.js when
// the build exists (production installs have no tsx), otherwise src/cli/main.ts through tsx.
// runCliProcess exits once the output is written (a pipe may take it more slowly than it is made).
/* global process, URL */
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
let runCliProcess;
if (existsSync(compiled)) {
  ({ runCliProcess } = await import(compiled.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ runCliProcess } = await import('../src/cli/main.ts'));
}
await runCliProcess(process.argv.slice(2));
