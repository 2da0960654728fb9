/// <reference lib="dom" />
/**
 * A browser app on another origin, as front-end teams build them: a real Apollo Client 4 bundle (no
 * typePolicies) with graphql-ws, served by its own backend on another port of 127.0.0.1, which mints
 * client tokens with its API key. In Chromium: `me`, `lookup`, `generate`, the `jobStatus` subscription
 * to `completed`, then `job` answered from the cache; a page on a second origin is refused; an API
 * key's answers cannot be read by a page.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { launchChromium, reportBrowser, SLOW_MS } from '../helpers/chromium.js';

const launched = await launchChromium();
const canRun = reportBrowser(launched, 'browser app tests');

/** The app's backend: its page, its bundle, and `POST /token`, minting a token for `tokenOrigin`. */
async function startAppServer(bundle: string, mint: () => Promise<unknown>): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html lang="en"><title>app</title><script type="module" src="/app.js"></script></html>');
    } else if (req.method === 'GET' && req.url === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
    } else if (req.method === 'POST' && req.url === '/token') {
      mint().then(
        (body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
        (err) => res.writeHead(500).end(String(err)),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe.skipIf(!canRun)('a browser app on another origin (Apollo Client 4 + graphql-ws)', { timeout: SLOW_MS * 3 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let worker: RunningWorker;
  let account: TestAccount;
  let context: BrowserContext;
  const servers: Server[] = [];
  let appOrigin = '';
  let otherOrigin = '';
  /** Where the page's requests went (origins), to show nothing left for other hosts. */
  const requested = new Set<string>();

  beforeAll(async () => {
    t = await startTestApp();
    worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
    account = await t.createAccountWithKey({ credits: 50 });
    const built = await build({
      entryPoints: [fileURLToPath(new URL('../fixtures/browser-app/apollo-app.ts', import.meta.url))],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
      define: { 'process.env.NODE_ENV': '"production"' },
    });
    const bundle = built.outputFiles[0]!.text;
    // The backend mints for the app's own origin only; the second server serves the same app.
    const mint = async () => {
      const res = await fetch(`${t.baseUrl}/api/client-tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ origins: [appOrigin], ttlSeconds: 600 }),
      });
      if (res.status !== 201) throw new Error(`mint answered ${res.status}`);
      return res.json();
    };
    for (const which of ['app', 'other'] as const) {
      const started = await startAppServer(bundle, mint);
      servers.push(started.server);
      if (which === 'app') appOrigin = started.origin;
      else otherOrigin = started.origin;
    }
    context = await browser.newContext();
    context.on('request', (r) => void requested.add(new URL(r.url()).origin));
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    for (const s of servers) await new Promise((resolve) => s.close(resolve));
    await worker?.stop(20_000);
    await t?.close();
  });

  it('runs me, lookup, generate and jobStatus to completed, then reads the job from the cache', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${appOrigin}/`);
    await page.waitForFunction(() => typeof window.runApp === 'function', null, { timeout: SLOW_MS });
    const report = await page.evaluate((gateway) => window.runApp(gateway), t.baseUrl);
    expect(report.error, JSON.stringify(report)).toBeUndefined();
    expect(report.credits).toBe(50);
    expect(report.lookup).toMatchObject({ keyword: 'serendipity', credits: 49 });
    expect((report.pushed as string[]).at(-1)).toBe('completed');
    expect(report.cachedStatus).toBe('completed');
    expect((report.watched as string[]).at(-1)).toBe('completed');
    expect(report.creditsAfter).toBe(48);
    expect(problems).toEqual([]);
    expect([...requested].sort()).toEqual([appOrigin, t.baseUrl].sort());
    await page.close();
  });

  it('a page on another origin is refused with a FORBIDDEN it can read', async () => {
    const page = await context.newPage();
    await page.goto(`${otherOrigin}/`);
    await page.waitForFunction(() => typeof window.runApp === 'function', null, { timeout: SLOW_MS });
    const report = await page.evaluate((gateway) => window.runApp(gateway), t.baseUrl);
    expect(report.errorCode, JSON.stringify(report)).toBe('FORBIDDEN');
    expect(String(report.error)).toContain('Origin not allowed for this token');
    expect(report.credits).toBeUndefined();
    await page.close();
  });

  it("an API key's answers cannot be read by a page", async () => {
    const page = await context.newPage();
    await page.goto(`${appOrigin}/`);
    await page.waitForFunction(() => typeof window.readWithApiKey === 'function', null, { timeout: SLOW_MS });
    expect(await page.evaluate(([gateway, key]) => window.readWithApiKey(gateway!, key!), [t.baseUrl, account.key])).toBe('blocked: TypeError');
    await page.close();
  });
});
