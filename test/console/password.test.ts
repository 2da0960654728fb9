/**
 * Password reset (an emailed single-use link, read from a real SMTP server on loopback) and change in
 * Settings: which sessions end, what the pages say, and that a reset link wins exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { argon2Hasher } from '../../src/providers/passwords/argon2.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, createConsoleUser, sameOrigin, signIn } from '../helpers/console.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

const NEW_PASSWORD = 'a brand new password 42';
let ipCounter = 0;

describe('password reset and change', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({ SMTP_URL: smtp.url, TRUST_PROXY: 'loopback' });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  function post(path: string, form: Record<string, string>, ip = `198.51.100.${++ipCounter}`) {
    return fetch(`${t.baseUrl}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip, ...sameOrigin(t) },
      body: new URLSearchParams(form),
    });
  }

  async function resetLinkFor(email: string): Promise<string> {
    const res = await post('/console/forgot-password', { email });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('If an account exists for that email, we sent a link');
    const mail = await smtp.nextMessage(email);
    expect(mail.subject).toBe('Reset your password');
    return mail.links[0]!;
  }
  const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;

  it('an unknown address gets the same answer and no email', async () => {
    const res = await post('/console/forgot-password', { email: 'nobody-here@example.com' });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('If an account exists for that email, we sent a link');
    const u = await createConsoleUser(t);
    await resetLinkFor(u.email);
    expect(smtp.countTo('nobody-here@example.com')).toBe(0);
  });

  it('the link sets a new password, ends every session of the user and shows the sign-in form', async () => {
    const u = await createConsoleUser(t);
    const first = (await signIn(t, u.email, u.password)).cookie!;
    const second = (await signIn(t, u.email, u.password)).cookie!;
    const link = await resetLinkFor(u.email);
    expect(link.startsWith(`${t.baseUrl}/console/reset-password?token=`)).toBe(true);
    const form = await fetch(link);
    expect(form.status).toBe(200);
    const html = await form.text();
    expect(html).toContain('<label for="newPassword">New password</label>');
    expect(html).toContain('>Set password</button>');

    // A refused password leaves the link usable.
    const short = await post('/console/reset-password', { token: tokenOf(link), newPassword: 'short' });
    expect(short.status).toBe(400);
    expect(await short.text()).toContain('Password must be at least 12 characters');

    const done = await post('/console/reset-password', { token: tokenOf(link), newPassword: NEW_PASSWORD });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/console/sign-in?reset=1');
    const signInPage = await (await fetch(`${t.baseUrl}/console/sign-in?reset=1`)).text();
    expect(signInPage).toContain('Your new password is set');
    for (const cookie of [first, second]) expect((await consoleGet(t, '/console', cookie)).status).toBe(303);
    expect((await signIn(t, u.email, u.password)).status).toBe(401);
    expect((await signIn(t, u.email, NEW_PASSWORD)).status).toBe(303);
    const audit = await t.connection.db!.collection('audit_entries').findOne({ event: 'user.password_reset', accountId: u.accountId });
    expect(audit).toMatchObject({ actor: `console:${u.email}`, details: { sessionsEnded: 2 } });
    expect(audit?.ip).toMatch(/^198\.51\.100\./);

    const reused = await fetch(link);
    expect(reused.status).toBe(410);
    expect(await reused.text()).toContain('This link has expired or was already used');
  });

  it('of two concurrent uses of one reset link exactly one wins', async () => {
    const u = await createConsoleUser(t);
    const token = tokenOf(await resetLinkFor(u.email));
    const passwords = ['first racing password', 'second racing password'];
    const results = await Promise.all(passwords.map((newPassword) => post('/console/reset-password', { token, newPassword })));
    expect(results.map((r) => r.status).sort()).toEqual([303, 410]);
    const winner = passwords[results.findIndex((r) => r.status === 303)]!;
    const loser = passwords.find((p) => p !== winner)!;
    expect((await signIn(t, u.email, winner)).status).toBe(303);
    expect((await signIn(t, u.email, loser)).status).toBe(401);
  });

  it('a newer reset link ends the older ones: only the newest works, and none after it is used', async () => {
    const u = await createConsoleUser(t);
    const older = tokenOf(await resetLinkFor(u.email));
    const newer = tokenOf(await resetLinkFor(u.email));
    const olderPage = await fetch(`${t.baseUrl}/console/reset-password?token=${older}`);
    expect(olderPage.status).toBe(410);
    expect(await olderPage.text()).toContain('This link has expired or was already used');
    expect((await post('/console/reset-password', { token: older, newPassword: 'the older link password' })).status).toBe(410);
    expect((await post('/console/reset-password', { token: newer, newPassword: NEW_PASSWORD })).status).toBe(303);
    expect((await post('/console/reset-password', { token: older, newPassword: 'the older link password' })).status).toBe(410);
    expect((await signIn(t, u.email, 'the older link password')).status).toBe(401);
    expect((await signIn(t, u.email, NEW_PASSWORD)).status).toBe(303);
  });

  it('a password change in Settings ends every reset link of the user', async () => {
    const u = await createConsoleUser(t);
    const token = tokenOf(await resetLinkFor(u.email));
    const cookie = (await signIn(t, u.email, u.password)).cookie!;
    expect((await consolePost(t, '/console/settings/password', cookie, { currentPassword: u.password, newPassword: NEW_PASSWORD })).status).toBe(303);
    expect((await fetch(`${t.baseUrl}/console/reset-password?token=${token}`)).status).toBe(410);
    expect((await post('/console/reset-password', { token, newPassword: 'the reset link password' })).status).toBe(410);
    expect((await signIn(t, u.email, NEW_PASSWORD)).status).toBe(303);
  });

  it('a reset link issued before the password changed never works after it, even one no update ended', async () => {
    const u = await createConsoleUser(t);
    const token = tokenOf(await resetLinkFor(u.email));
    // The password replaced behind the service's back (a crash between its steps, the CLI, an older
    // release): the link was issued for the password that was, so it is over.
    await t.connection.db!.collection('console_users').updateOne({ email: u.email }, { $set: { passwordHash: await argon2Hasher.hash(NEW_PASSWORD) } });
    expect((await post('/console/reset-password', { token, newPassword: 'the reset link password' })).status).toBe(410);
    expect((await signIn(t, u.email, NEW_PASSWORD)).status).toBe(303);
  });

  it("a reset link of the previous release (payload without the password's stamp) works, and a change ends it", async () => {
    const u = await createConsoleUser(t);
    const userId = (await t.connection.db!.collection('console_users').findOne({ email: u.email }))!._id.toHexString();
    const legacy = () => t.services.links.issue('reset_password', { userId }, 3_600_000);
    expect((await post('/console/reset-password', { token: (await legacy()).token, newPassword: NEW_PASSWORD })).status).toBe(303);
    const cookie = (await signIn(t, u.email, NEW_PASSWORD)).cookie!;
    const token = (await legacy()).token;
    expect((await consolePost(t, '/console/settings/password', cookie, { currentPassword: NEW_PASSWORD, newPassword: 'yet another new password' })).status).toBe(303);
    expect((await post('/console/reset-password', { token, newPassword: 'the legacy link password' })).status).toBe(410);
  });

  it('the 6th reset email to one address within an hour is 429 with Retry-After', async () => {
    const u = await createConsoleUser(t);
    for (let i = 0; i < 5; i++) await resetLinkFor(u.email);
    const refused = await post('/console/forgot-password', { email: u.email });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.text()).toContain('Too many attempts');
  });

  it('Settings: a wrong current password changes nothing and says so', async () => {
    const u = await createConsoleUser(t);
    const cookie = (await signIn(t, u.email, u.password)).cookie!;
    const page = await (await consoleGet(t, '/console/settings', cookie)).text();
    expect(page).toContain('<a href="/console/settings" aria-current="page">Settings</a>');
    expect(page).toContain('<label for="currentPassword">Current password</label>');
    const res = await consolePost(t, '/console/settings/password', cookie, { currentPassword: 'not the password', newPassword: NEW_PASSWORD });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Current password is incorrect');
    expect((await signIn(t, u.email, u.password)).status).toBe(303);
  });

  it('Settings: changing the password ends the other sessions and keeps this one', async () => {
    const u = await createConsoleUser(t);
    const other = (await signIn(t, u.email, u.password)).cookie!;
    const mine = (await signIn(t, u.email, u.password)).cookie!;
    const res = await consolePost(t, '/console/settings/password', mine, { currentPassword: u.password, newPassword: NEW_PASSWORD });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/settings?done=password');
    expect(await (await consoleGet(t, '/console/settings?done=password', mine)).text()).toContain('Your password is changed');
    expect((await consoleGet(t, '/console', other)).status).toBe(303);
    expect((await signIn(t, u.email, NEW_PASSWORD)).status).toBe(303);
    const audit = await t.connection.db!.collection('audit_entries').findOne({ event: 'user.password_changed', accountId: u.accountId });
    expect(audit).toMatchObject({ actor: `console:${u.email}`, details: { sessionsEnded: 1 } });
  });

  it('Settings: a refused new password is shown and changes nothing', async () => {
    const u = await createConsoleUser(t);
    const cookie = (await signIn(t, u.email, u.password)).cookie!;
    const res = await consolePost(t, '/console/settings/password', cookie, { currentPassword: u.password, newPassword: 'password1234' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Password is too common; choose another');
    expect((await signIn(t, u.email, u.password)).status).toBe(303);
  });
});
