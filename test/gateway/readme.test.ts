import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS, loadConfig } from '../../src/config.js';
import { ERROR_CATALOG } from '../../src/domain/errors.js';

/** The README's tables are documentation clients rely on: they must match the code. */
const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');

function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README has a "## ${title}" section`).toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

function rows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*-/.test(l))
    .slice(1)
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
}

describe('README', () => {
  it('the error table lists exactly the catalog: status, code and text', () => {
    const table = rows(section('Errors')).map(([status, code, text]) => ({ status: Number(status), code: code!.replace(/`/g, ''), text }));
    const catalog = Object.entries(ERROR_CATALOG).map(([code, spec]) => ({ status: spec.httpStatus, code, text: spec.message }));
    const byCode = (a: { code: string }, b: { code: string }) => a.code.localeCompare(b.code);
    expect(table.sort(byCode)).toEqual(catalog.sort(byCode));
  });

  it('the configuration table lists exactly the variables src/config.ts reads', () => {
    const names = rows(section('Configuration')).map(([name]) => name!.replace(/`/g, ''));
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...CONFIG_KEYS].sort());
  });

  it('the defaults it states are the defaults', () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    for (const [name, dflt] of rows(section('Configuration'))) {
      const key = name!.replace(/`/g, '');
      const stated = /^`(.*)`$/.exec(dflt!)?.[1];
      if (stated === undefined) expect(defaults[key], `${key} has no default`).toBeUndefined();
      else expect(String(Array.isArray(defaults[key]) ? (defaults[key] as string[]).join(',') : defaults[key]), key).toBe(stated);
    }
  });

  it('every `npm run <script>` it shows is a script of package.json', async () => {
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    const named = [...readme.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(5);
    for (const script of new Set(named)) expect(pkg.scripts, `npm run ${script}`).toHaveProperty([script]);
  });

  it('states the two commands and the CLI', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm test');
    for (const cmd of ['account create', 'credits grant', 'key create', 'key list', 'key delete', 'audit export']) expect(readme).toContain(`npm run cli -- ${cmd}`);
  });
});
