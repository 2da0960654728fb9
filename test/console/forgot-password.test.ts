/**
 * Forgot-password answers before any email is sent, for a known address as for an unknown one: the
 * request is written to an outbox (collection `email_outbox`) and the email goes out after the answer,
 * so a slow mail server shows in neither answer. A mail server that holds its answer (test/helpers/smtp.ts
 * `hold`) shows the order; a gateway that stops after answering loses no email: another one sends it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createConsoleUser, sameOrigin } from '../helpers/console.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';
import { until } from '../helpers/until.js';

const SENT = 'If an account exists for that email, we sent a link';
let ipCounter = 0;

function forgot(t: TestApp, email: string) {
  return fetch(`${t.baseUrl}/console/forgot-password`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': `198.51.100.${++ipCounter}`, ...sameOrigin(t) },
    body: new URLSearchParams({ email }),
  });
}

describe('forgot-password with a mail server that holds its answer', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  beforeAll(async () => {
    smtp = await startSmtpServer({ hold: true });
    t = await startTestApp({ SMTP_URL: smtp.url, TRUST_PROXY: 'loopback' });
  });
  afterAll(async () => {
    smtp?.release();
    await t?.close();
    await smtp?.close();
  });

  it('known and unknown addresses are answered while the mail server still holds the email; it is delivered after', async () => {
    const u = await createConsoleUser(t);
    const unknown = await forgot(t, 'nobody-at-all@example.com');
    expect(unknown.status).toBe(200);
    expect(await unknown.text()).toContain(SENT);

    const known = await forgot(t, u.email);
    expect(known.status).toBe(200);
    expect(await known.text()).toContain(SENT);
    // Answered, and the mail server has not accepted the email yet: it is sent after the answer.
    expect(smtp.countTo(u.email)).toBe(0);
    await until(() => smtp.holding() === 1, 'the reset email held by the mail server');
    expect(smtp.countTo(u.email)).toBe(0);

    smtp.release();
    const mail = await smtp.nextMessage(u.email);
    expect(mail.subject).toBe('Reset your password');
    const link = new URL(mail.links[0]!);
    expect((await fetch(`${t.baseUrl}${link.pathname}${link.search}`)).status).toBe(200);
    await until(async () => (await t.connection.db!.collection('email_outbox').countDocuments()) === 0, 'the outbox emptied');
    expect(smtp.countTo('nobody-at-all@example.com')).toBe(0);
  });
});

describe('forgot-password: a gateway that stops after answering', () => {
  let first: TestApp;
  let second: TestApp | undefined;
  let stalled: TestSmtpServer;
  let working: TestSmtpServer;
  beforeAll(async () => {
    stalled = await startSmtpServer({ hold: true });
    working = await startSmtpServer();
    // A short claim, so that the second gateway need not wait the default minute for it to lapse.
    first = await startTestApp({ SMTP_URL: stalled.url, TRUST_PROXY: 'loopback', dbName: 't_forgot_password_crash', deps: { emailOutbox: { leaseMs: 1000 } } });
  });
  afterAll(async () => {
    stalled?.release();
    await second?.close();
    await working?.close();
    await stalled?.close();
  });

  it('loses no email: another gateway on the database sends it once the first one\'s claim lapsed', async () => {
    const u = await createConsoleUser(first);
    expect((await forgot(first, u.email)).status).toBe(200);
    await until(() => stalled.holding() === 1, 'the email on its way through the first gateway');
    // The first gateway goes away with the email unsent (its mail server never answered).
    await first.close();

    second = await startTestApp({ SMTP_URL: working.url, TRUST_PROXY: 'loopback', dbName: 't_forgot_password_crash', deps: { emailOutbox: { sweepEveryMs: 100 } } });
    expect(await second.connection.db!.collection('email_outbox').countDocuments()).toBe(1);
    const mail = await working.nextMessage(u.email);
    expect(mail.subject).toBe('Reset your password');
    const link = new URL(mail.links[0]!);
    expect((await fetch(`${second.baseUrl}${link.pathname}${link.search}`)).status).toBe(200);
  });
});
