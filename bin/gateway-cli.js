#!/usr/bin/env node
// Admin CLI entry for `npx gateway-cli …` / the package's bin: runs src/cli/main.ts through tsx.
// runCliProcess exits once the output is written (a pipe may take it more slowly than it is made).
/* global process */
import { register } from 'tsx/esm/api';

register();
const { runCliProcess } = await import('../src/cli/main.ts');
await runCliProcess(process.argv.slice(2));
