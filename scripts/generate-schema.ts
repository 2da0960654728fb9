import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildGraphQLSchema, printSchemaFile } from '../src/graphql/schema.js';

/**
 * Writes schema.graphql at the repository root from the code-first schema (`npm run schema`).
 * `--check` writes nothing and exits 1 when the file is stale (used by `npm run check`).
 */
const target = fileURLToPath(new URL('../schema.graphql', import.meta.url));
const sdl = printSchemaFile(await buildGraphQLSchema());

if (process.argv.includes('--check')) {
  const current = await readFile(target, 'utf8').catch(() => '');
  if (current !== sdl) {
    console.error('schema.graphql is stale: run `npm run schema` and commit the result');
    process.exit(1);
  }
  console.log('schema.graphql is up to date');
} else {
  await writeFile(target, sdl);
  console.log(`wrote ${target}`);
}
