import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS, loadConfig } from '../../src/config.js';
import { ERROR_CATALOG } from '../../src/domain/errors.js';

/** The README and the reference pages in docs/ are documentation clients rely on: they must match the code. */
const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');
const readme = await read('README.md');
const docNames = (await readdir(new URL('../../docs/', import.meta.url))).filter((f) => f.endsWith('.md'));
const docs = Object.fromEntries(await Promise.all(docNames.map(async (f) => [f, await read(`docs/${f}`)] as const)));

function section(page: string, title: string): string {
  const text = docs[page];
  expect(text, `docs/${page} exists`).toBeDefined();
  const start = text!.indexOf(`\n## ${title}\n`);
  expect(start, `docs/${page} has a "## ${title}" section`).toBeGreaterThanOrEqual(0);
  const end = text!.indexOf('\n## ', start + 1);
  return text!.slice(start, end < 0 ? undefined : end);
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
    const table = rows(section('api.md', 'Errors')).map(([status, code, text]) => ({ status: Number(status), code: code!.replace(/`/g, ''), text }));
    const catalog = Object.entries(ERROR_CATALOG).map(([code, spec]) => ({ status: spec.httpStatus, code, text: spec.message }));
    const byCode = (a: { code: string }, b: { code: string }) => a.code.localeCompare(b.code);
    expect(table.sort(byCode)).toEqual(catalog.sort(byCode));
  });

  it('the configuration table lists exactly the variables src/config.ts reads', () => {
    const names = rows(section('configuration.md', 'Variables')).map(([name]) => name!.replace(/`/g, ''));
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...CONFIG_KEYS].sort());
  });

  it('the defaults it states are the defaults', () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    for (const [name, dflt] of rows(section('configuration.md', 'Variables'))) {
      const key = name!.replace(/`/g, '');
      const stated = /^`(.*)`$/.exec(dflt!)?.[1];
      if (stated === undefined) expect(defaults[key], `${key} has no default`).toBeUndefined();
      else expect(String(Array.isArray(defaults[key]) ? (defaults[key] as string[]).join(',') : defaults[key]), key).toBe(stated);
    }
  });

  it('every `npm run <script>` it shows is a script of package.json', async () => {
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    const named = [readme, ...Object.values(docs)].flatMap((text) => [...text.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]));
    expect(named.length).toBeGreaterThan(5);
    for (const script of new Set(named)) expect(pkg.scripts, `npm run ${script}`).toHaveProperty([script]);
  });

  it('states the two commands, and the operations page the CLI', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm test');
    const cli = section('operations.md', 'Admin CLI');
    for (const cmd of ['account create', 'credits grant', 'key create', 'key list', 'key delete', 'audit export']) expect(cli).toContain(`npm run cli -- ${cmd}`);
  });

  it('every relative link of the README and docs/ names a file that exists, and an anchor that its page has', async () => {
    const { access } = await import('node:fs/promises');
    const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
    const anchors = (text: string) => new Set([...text.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!)));
    const pages: [string, string][] = [['README.md', readme], ...Object.entries(docs).map(([f, t]) => [`docs/${f}`, t] as [string, string])];
    for (const [page, text] of pages) {
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#');
        const base = new URL(`../../${page}`, import.meta.url);
        const path = file ? new URL(file, base) : base;
        await expect(access(path), `${page} links to ${target}`).resolves.toBeUndefined();
        if (anchor && path.pathname.endsWith('.md')) {
          const linked = file ? await readFile(path, 'utf8') : text;
          expect(anchors(linked).has(anchor), `${page} links to ${target}: no such heading`).toBe(true);
        }
      }
    }
  });
});
