/**
 * Teams in a real browser (Debian's Chromium via playwright-core) with a real SMTP server on loopback:
 * invite → join as a new person → role change → remove; the account switcher; axe on the Team page;
 * the page's weight. UPDATE_SCREENSHOTS=1 also writes docs/console/team-375.png and team-1440.png.
 */
import { AxeBuilder } from '@axe-core/playwright';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { docsScreenshot, expectFitsWidth, launchChromium, reportBrowser, SLOW_MS } from '../helpers/chromium.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

const OWNER = 'ada@example.com';
const PASSWORD = 'correct horse battery staple';
const NEWCOMER = 'grace@example.com';

const launched = await launchChromium();
reportBrowser(launched, 'team browser tests');

describe.skipIf(!launched.browser)('Team page in Chromium', { timeout: SLOW_MS * 5 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let smtp: TestSmtpServer;
  const contexts: BrowserContext[] = [];
  const pageProblems: string[] = [];
  let owner: Page;
  let narrow: Page;
  let newcomer: Page;

  async function newPage(width: number, height: number): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height }, baseURL: t.baseUrl });
    ctx.setDefaultTimeout(SLOW_MS);
    ctx.setDefaultNavigationTimeout(SLOW_MS);
    contexts.push(ctx);
    const p = await ctx.newPage();
    p.on('pageerror', (err) => pageProblems.push(`page error on ${p.url()}: ${err.message}`));
    p.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) pageProblems.push(`CSP on ${p.url()}: ${m.text()}`);
    });
    return p;
  }

  async function signIn(p: Page, email: string, password: string): Promise<void> {
    await p.goto('/console/sign-in');
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  }

  async function goTo(p: Page, link: string): Promise<void> {
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
    await p.getByRole('heading', { level: 1, name: link, exact: true }).waitFor();
    await p.waitForLoadState('load');
  }

  async function expectAccessible(p: Page, what: string): Promise<void> {
    const { violations } = await new AxeBuilder({ page: p }).analyze();
    const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(blocking.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), `axe on ${what}`).toEqual([]);
  }



  const memberRow = (p: Page, email: string) => p.getByRole('table', { name: /member/ }).getByRole('row', { name: new RegExp(email) });

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({ SMTP_URL: smtp.url });
    const acme = await t.createAccountWithKey({ name: 'Acme Analytics' });
    const globex = await t.createAccountWithKey({ name: 'Globex' });
    const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
    await t.services.console.users.create(acme.accountId, OWNER, PASSWORD, actor);
    await t.services.console.team.addByEmail(globex.accountId, OWNER, 'developer', actor);
    const lin = await t.services.console.users.create(globex.accountId, 'lin@example.com', `${PASSWORD} too`, actor);
    await t.services.console.team.addByEmail(acme.accountId, 'lin@example.com', 'admin', actor);
    void lin;
    owner = await newPage(1440, 900);
  }, SLOW_MS * 2);

  afterEach(() => {
    expect(pageProblems.splice(0), 'uncaught page errors or Content-Security-Policy refusals').toEqual([]);
  });

  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser.close();
    await t?.close();
    await smtp?.close();
  }, SLOW_MS * 2);

  it('the Team page: members with Email, Role, Joined; axe finds nothing; it fits 375 px; its weight', async () => {
    await signIn(owner, OWNER, PASSWORD);
    await goTo(owner, 'Team');
    for (const name of ['Email', 'Role', 'Joined']) await owner.getByRole('columnheader', { name, exact: true }).first().waitFor();
    await memberRow(owner, 'lin@example.com').waitFor();
    await expectAccessible(owner, 'Team');

    // What the browser loads for the page: the document, the stylesheet and the script (transfer sizes).
    const weight = (await owner.evaluate(
      `(() => { const nav = performance.getEntriesByType('navigation')[0]; const res = performance.getEntriesByType('resource'); return { document: nav.transferSize, documentBody: nav.decodedBodySize, resources: res.map((r) => ({ name: r.name.replace(location.origin, ''), transfer: r.transferSize, body: r.decodedBodySize })) }; })()`,
    )) as { document: number; documentBody: number; resources: { name: string; transfer: number; body: number }[] };
    const total = weight.documentBody + weight.resources.reduce((sum, r) => sum + r.body, 0);
    console.log(`[team page weight] document ${weight.documentBody} B, ${weight.resources.map((r) => `${r.name} ${r.body} B`).join(', ')}; total ${total} B (uncompressed)`);
    expect(weight.resources.every((r) => r.name.startsWith('/console/assets/'))).toBe(true);
    expect(total).toBeLessThan(60_000);

    narrow = await newPage(375, 800);
    await signIn(narrow, OWNER, PASSWORD);
    await narrow.goto('/console/team');
    await narrow.getByRole('heading', { level: 1, name: 'Team' }).waitFor();
    await expectFitsWidth(narrow, 'Team at 375 px');
    await expectAccessible(narrow, 'Team at 375 px');
  });

  it('invite → the email → a new person sets a password and joins', async () => {
    await owner.getByRole('button', { name: 'Invite member' }).click();
    const dialog = owner.getByRole('dialog', { name: 'Invite member' });
    await dialog.waitFor();
    await expectAccessible(owner, 'Team with the Invite member dialog open');
    await dialog.getByLabel('Email').fill(NEWCOMER);
    await dialog.getByLabel('Role').selectOption('developer');
    await dialog.getByRole('button', { name: 'Send invitation' }).click();
    await owner.getByRole('status').filter({ hasText: 'Invitation sent.' }).waitFor();
    const pending = owner.getByRole('table', { name: /pending invitation/ });
    for (const name of ['Email', 'Role', 'Expires']) await pending.getByRole('columnheader', { name, exact: true }).waitFor();
    await pending.getByRole('row', { name: new RegExp(NEWCOMER) }).getByRole('button', { name: /Revoke/ }).waitFor();
    await expectAccessible(owner, 'Team with a pending invitation');
    await docsScreenshot(owner, 'team-1440');
    await narrow.reload();
    await narrow.getByRole('table', { name: /pending invitation/ }).waitFor();
    await expectFitsWidth(narrow, 'Team at 375 px with a pending invitation');
    await docsScreenshot(narrow, 'team-375');

    const mail = await smtp.nextMessage(NEWCOMER);
    const link = mail.links.find((l) => l.includes('/console/invitations/accept?token='))!;
    expect(link.startsWith(t.baseUrl)).toBe(true);

    newcomer = await newPage(1440, 900);
    await newcomer.goto(link);
    await newcomer.getByRole('heading', { name: 'Join “Acme Analytics”' }).waitFor();
    await expectAccessible(newcomer, 'the invitation page');
    await newcomer.getByLabel('Password').fill('a password of my own choosing');
    await newcomer.getByRole('button', { name: 'Join' }).click();
    await newcomer.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await newcomer.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Playground' }).waitFor();

    await owner.reload();
    await memberRow(owner, NEWCOMER).waitFor();
    expect(await owner.getByText('No pending invitations.').count()).toBe(1);
  });

  it('role change: the owner makes the newcomer a viewer; their Playground link goes', async () => {
    const row = memberRow(owner, NEWCOMER);
    await row.getByLabel('Role').selectOption('viewer');
    await row.getByRole('button', { name: 'Save' }).click();
    await owner.getByRole('status').filter({ hasText: 'Role saved.' }).waitFor();
    expect(await memberRow(owner, NEWCOMER).getByLabel('Role').inputValue()).toBe('viewer');

    await newcomer.reload();
    await newcomer.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await newcomer.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Playground' }).count()).toBe(0);
    await newcomer.goto('/console/playground');
    await newcomer.getByText('You do not have permission to do that').waitFor();
  });

  it('remove: a confirmation dialog, then the member is signed out of the account at once', async () => {
    await memberRow(owner, NEWCOMER).getByRole('button', { name: /Remove/ }).click();
    const dialog = owner.getByRole('dialog', { name: 'Remove member' });
    await dialog.waitFor();
    await expectAccessible(owner, 'Team with the Remove member dialog open');
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await owner.getByRole('status').filter({ hasText: 'Member removed.' }).waitFor();
    expect(await memberRow(owner, NEWCOMER).count()).toBe(0);

    await newcomer.goto('/console/keys');
    await newcomer.waitForURL(/\/console\/sign-in/);
  });

  it('the account switcher: Switch account, then a link per account; the session moves to it', async () => {
    await owner.goto('/console');
    await owner.getByRole('button', { name: 'Switch account' }).click();
    await expectAccessible(owner, 'the account menu open');
    await owner.getByRole('link', { name: 'Globex' }).click();
    await owner.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await goTo(owner, 'Team');
    // A developer in Globex: no invitations, no role selects, and the switcher leads back.
    expect(await owner.getByRole('button', { name: 'Invite member' }).count()).toBe(0);
    await memberRow(owner, 'lin@example.com').waitFor();
    await owner.getByRole('button', { name: 'Switch account' }).click();
    await owner.getByRole('link', { name: 'Acme Analytics' }).click();
    await owner.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await goTo(owner, 'Team');
    await owner.getByRole('button', { name: 'Invite member' }).waitFor();
  });
});
