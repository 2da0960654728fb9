/**
 * Debian's Chromium for browser tests, driven by playwright-core (no browser is ever downloaded).
 * CHROMIUM_PATH (default /usr/bin/chromium) must exist and start; when it does not, a test file skips
 * with one line saying why, unless REQUIRE_BROWSER_TESTS=1 (CI), which turns the skip into a failure.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REQUIRED = process.env.REQUIRE_BROWSER_TESTS === '1';
/** Far beyond any normal wait: browser tests share a busy 2-core machine with other test files. */
export const SLOW_MS = 60_000;
const HOW_TO_ENABLE = 'install it (apt-get install -y chromium) or set CHROMIUM_PATH to a Chromium or Chrome executable';

export type Launched = { browser: Browser; reason?: undefined } | { browser?: undefined; reason: string };

export async function launchChromium(): Promise<Launched> {
  if (!existsSync(CHROMIUM_PATH)) return { reason: `no Chromium at ${CHROMIUM_PATH}` };
  try {
    const browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      // Without the background-networking flags Chromium keeps calling Google's hosts, refused here.
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      timeout: SLOW_MS,
    });
    return { browser };
  } catch (err) {
    return { reason: `Chromium at ${CHROMIUM_PATH} did not start (${String((err as Error).message).split('\n')[0]})` };
  }
}

/**
 * Call at the top of a browser test file (after launching): prints why the file skips, or fails it
 * under REQUIRE_BROWSER_TESTS=1. Returns true when the tests can run.
 */
export function reportBrowser(launched: Launched, what: string): boolean {
  if (!launched.reason) return true;
  if (!REQUIRED) {
    console.log(`[${what}] skipped: ${launched.reason}; to run them, ${HOW_TO_ENABLE} (REQUIRE_BROWSER_TESTS=1 makes this a failure).`);
    return false;
  }
  describe(`${what} (REQUIRE_BROWSER_TESTS=1)`, () => {
    it('has a browser to run in', () => {
      throw new Error(`REQUIRE_BROWSER_TESTS=1 but ${launched.reason}: ${HOW_TO_ENABLE}.`);
    });
  });
  return false;
}

/** What a page did that a test checks afterwards: where its requests went, and what went wrong in it. */
export interface PageWatch {
  /** Origins of every request the context made. */
  origins: Set<string>;
  /** Uncaught page errors and Content-Security-Policy refusals (with the directive and the sample). */
  problems: string[];
}

/** Opens a page in `context` that records its requests' origins, its errors and any CSP refusal. */
export async function watchedPage(context: BrowserContext): Promise<{ page: Page } & PageWatch> {
  const watch: PageWatch = { origins: new Set(), problems: [] };
  context.on('request', (r) => void watch.origins.add(new URL(r.url()).origin));
  const page = await context.newPage();
  // Names the directive and the refused text, which Chromium's own console message leaves out.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`Refused by CSP ${e.effectiveDirective}: ${e.sample}`));
  });
  page.on('pageerror', (e) => watch.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content.Security.Policy|Refused/i.test(m.text())) watch.problems.push(`console: ${m.text()}`);
  });
  return { page, ...watch };
}

/** Where the console's screenshots in the docs live; written only with UPDATE_SCREENSHOTS=1. */
const SCREENSHOT_DIR = new URL('../../docs/console/', import.meta.url);

/** Writes docs/console/<name>.png from the page when UPDATE_SCREENSHOTS=1 (the whole page unless `fullPage: false`). */
export async function docsScreenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: new URL(`${name}.png`, SCREENSHOT_DIR).pathname, fullPage: opts.fullPage ?? true, animations: 'disabled', caret: 'hide' });
}

/** The page scrolls no wider than its window. */
export async function expectFitsWidth(page: Page, what: string): Promise<void> {
  const { scrollWidth, clientWidth } = (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })')) as {
    scrollWidth: number;
    clientWidth: number;
  };
  expect(scrollWidth, `${what} is ${scrollWidth} px wide in a ${clientWidth} px window`).toBeLessThanOrEqual(clientWidth);
}
