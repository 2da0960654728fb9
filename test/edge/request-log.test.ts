/**
 * Request log lines keep the path and never a secret the query string carries: a signed image URL's
 * `sig`, whatever its spelling, and the token of every emailed link (reset, verification,
 * invitation), also when a link travels inside another URL's `next`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consolePost, createConsoleUser, signIn } from '../helpers/console.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

const SECRET = 'a request-log test signing secret, 32+ chars';
const lines: string[] = [];
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LOG_LEVEL: 'info', URL_SIGNING_SECRET: SECRET, logStream: { write: (line: string) => lines.push(line) } });
});
afterAll(async () => {
  await t?.close();
});

/** The `url` of the app's "incoming request" lines. */
const loggedUrls = () => lines.map((l) => JSON.parse(l) as { msg: string; req?: { url: string } }).filter((l) => l.msg === 'incoming request').map((l) => l.req!.url);

describe('request logs', () => {
  it("a signed image URL's sig is redacted; the path and expiry stay", async () => {
    const jobId = randomUUID();
    const path = new ImageUrlSigner(SECRET, 3600).path(jobId, 0);
    const sig = new URL(path, 'http://x').searchParams.get('sig')!;
    const expires = new URL(path, 'http://x').searchParams.get('expires')!;
    // A valid signature of a job that does not exist: verified, then not found.
    const res = await fetch(`${t.baseUrl}${path}`);
    expect(res.status).toBe(404);
    expect(lines.join('\n')).not.toContain(sig);
    expect(loggedUrls()).toContain(`/api/playground/images/${jobId}/images/0?expires=${expires}&sig=[redacted]`);
  });

  it('every spelling of sig is redacted (percent-encoded name, repeated, upper case); other parameters stay', async () => {
    const secret = randomUUID().replace(/-/g, '');
    for (const query of [`%73ig=${secret}`, `SIG=${secret}`, `expires=1&sig=a&sig=${secret}#x`, `a=1&s%69g=${secret}&b=2`]) {
      await fetch(`${t.baseUrl}/api/playground/images/${randomUUID()}/images/0?${query}`);
    }
    await fetch(`${t.baseUrl}/console/usage?from=2026-01-01&to=2026-01-31`);
    expect(lines.join('\n')).not.toContain(secret);
    const urls = loggedUrls();
    expect(urls.some((u) => u.endsWith('?a=1&s%69g=[redacted]&b=2'))).toBe(true);
    expect(urls).toContain('/console/usage?from=2026-01-01&to=2026-01-31');
  });
});

describe('request logs: emailed link tokens', () => {
  let smtp: TestSmtpServer;
  let withMail: TestApp;
  const mailLines: string[] = [];
  beforeAll(async () => {
    smtp = await startSmtpServer();
    withMail = await startTestApp({ LOG_LEVEL: 'info', SMTP_URL: smtp.url, TRUST_PROXY: 'loopback', logStream: { write: (line: string) => mailLines.push(line) } });
  });
  afterAll(async () => {
    await withMail?.close();
    await smtp?.close();
  });
  const urlsOf = (from: string[]) => from.map((l) => JSON.parse(l) as { msg: string; req?: { url: string } }).filter((l) => l.msg === 'incoming request').map((l) => l.req!.url);
  const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;
  /** Opens an emailed link on this app and follows its redirects, as a browser would. */
  async function open(link: string) {
    const url = new URL(link);
    return fetch(`${withMail.baseUrl}${url.pathname}${url.search}`);
  }

  it('a reset link: opened, its token is redacted in every line', async () => {
    const u = await createConsoleUser(withMail);
    await consolePost(withMail, '/console/forgot-password', null, { email: u.email });
    const link = (await smtp.nextMessage(u.email)).links[0]!;
    expect((await open(link)).status).toBe(200);
    expect(mailLines.join('\n')).not.toContain(tokenOf(link));
    expect(urlsOf(mailLines)).toContain('/console/reset-password?token=[redacted]');
  });

  it('a verification link: opened, its token is redacted', async () => {
    const email = `new-${randomUUID().slice(0, 8)}@example.com`;
    await consolePost(withMail, '/console/sign-up', null, { accountName: 'Log Test', email, password: 'a long enough sign-up password' });
    const link = (await smtp.nextMessage(email)).links[0]!;
    await open(link);
    expect(mailLines.join('\n')).not.toContain(tokenOf(link));
    expect(urlsOf(mailLines)).toContain('/console/verify-email?token=[redacted]');
  });

  it('an invitation link for a known user: redacted, also inside the sign-in redirect\'s next', async () => {
    const owner = await createConsoleUser(withMail);
    const invited = await createConsoleUser(withMail);
    const cookie = (await signIn(withMail, owner.email, owner.password)).cookie!;
    expect((await consolePost(withMail, '/console/team/invitations', cookie, { email: invited.email, role: 'developer' })).status).toBe(303);
    const link = (await smtp.nextMessage(invited.email)).links.find((l) => l.includes('/console/invitations/accept'))!;
    // Followed: the link sends a known user to sign in first, carrying the link in `next`.
    const page = await open(link);
    expect(page.url).toContain('/console/sign-in?next=');
    expect(mailLines.join('\n')).not.toContain(tokenOf(link));
    const urls = urlsOf(mailLines);
    expect(urls).toContain('/console/invitations/accept?token=[redacted]');
    expect(urls.some((u) => u.startsWith('/console/sign-in?next=') && u.includes('token%3D[redacted]'))).toBe(true);
  });
});
