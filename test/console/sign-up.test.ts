/**
 * Sign-up over HTTP, with the emails read from a real SMTP server on loopback: nothing exists until
 * the link is opened; the answer is the same for a taken address; SIGNUP=invite removes the doors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, sameOrigin } from '../helpers/console.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

const PASSWORD = 'a long enough sign-up password';
let ipCounter = 0;

describe('sign-up (SIGNUP=open)', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  const accounts = () => t.connection.db!.collection('accounts');
  const users = () => t.connection.db!.collection('console_users');

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({ SMTP_URL: smtp.url, EMAIL_FROM: 'Gateway <no-reply@example.com>', SIGNUP_CREDITS: '25', PUBLIC_BASE_URL: 'http://gateway.test:4000', TRUST_PROXY: 'loopback' });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  /** Each call from its own client address, so that the per-IP email limit stays out of the way. */
  function signUp(form: Record<string, string>, ip = `203.0.113.${++ipCounter}`) {
    return fetch(`${t.baseUrl}/console/sign-up`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip, ...sameOrigin(t), origin: 'http://gateway.test:4000' },
      body: new URLSearchParams(form),
    });
  }
  const onThisApp = (link: string) => link.replace('http://gateway.test:4000', t.baseUrl);

  it('a new address gets a verification link on PUBLIC_BASE_URL, and nothing is created before it is opened', async () => {
    const res = await signUp({ accountName: 'Acme Frontend', email: 'Dana@Example.com', password: PASSWORD });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<h1>Check your email</h1>');
    const mail = await smtp.nextMessage('dana@example.com');
    expect(mail.subject).toBe('Confirm your email to create your account');
    expect(mail.links[0]).toMatch(/^http:\/\/gateway\.test:4000\/console\/verify-email\?token=[A-Za-z0-9_-]{43}$/);
    expect(mail.html).toContain('Acme Frontend');
    expect(await accounts().countDocuments({ name: 'Acme Frontend' })).toBe(0);
    expect(await users().countDocuments({ email: 'dana@example.com' })).toBe(0);
  });

  it('opening the link creates the account with SIGNUP_CREDITS and its owner, signs in and shows the Overview', async () => {
    await signUp({ accountName: 'Beta Team', email: 'eli@example.com', password: PASSWORD });
    const link = onThisApp((await smtp.nextMessage('eli@example.com')).links[0]!);
    const opened = await fetch(link, { redirect: 'manual' });
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe('/console');
    const cookie = opened.headers.getSetCookie().find((c) => c.startsWith('console_session='))!.split(';')[0]!;
    const overview = await consoleGet(t, '/console', cookie);
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('<h1>Overview</h1>');
    const account = await accounts().findOne({ name: 'Beta Team' });
    expect(account?.credits).toBe(25);
    const user = await users().findOne({ email: 'eli@example.com' });
    expect(user?.accountId.toHexString()).toBe(account!._id.toHexString());
    const audit = await t.connection.db!.collection('audit_entries').find({ accountId: account!._id.toHexString() }).toArray();
    expect(audit.map((e) => e.event)).toEqual(expect.arrayContaining(['account.created', 'credits.granted', 'user.created']));
    expect(audit.find((e) => e.event === 'credits.granted')).toMatchObject({ amount: 25, actor: 'console:eli@example.com' });
    // The address that opened the link.
    expect(audit.find((e) => e.event === 'account.created')?.ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/);

    // The link is used: a second opening creates nothing.
    const again = await fetch(link, { redirect: 'manual' });
    expect(again.status).toBe(410);
    expect(await again.text()).toContain('This link has expired or was already used');
    expect(await accounts().countDocuments({ name: 'Beta Team' })).toBe(1);
  });

  it('a taken address gets the same answer, and an email with a reset link instead', async () => {
    await signUp({ accountName: 'First', email: 'fay@example.com', password: PASSWORD });
    await fetch(onThisApp((await smtp.nextMessage('fay@example.com')).links[0]!), { redirect: 'manual' });
    const res = await signUp({ accountName: 'Second', email: 'fay@example.com', password: 'another long password here' });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<h1>Check your email</h1>');
    const mail = await smtp.nextMessage('fay@example.com');
    expect(mail.subject).toBe('You already have an account');
    expect(mail.links[0]).toMatch(/^http:\/\/gateway\.test:4000\/console\/reset-password\?token=/);
    expect(await accounts().countDocuments({ name: 'Second' })).toBe(0);
  });

  it('an unknown, malformed or repeated token says the link expired and creates nothing', async () => {
    for (const q of ['', '?token=', `?token=${'A'.repeat(43)}`, '?token=x&token=y']) {
      const res = await fetch(`${t.baseUrl}/console/verify-email${q}`, { redirect: 'manual' });
      expect(res.status, q).toBe(q.includes('&') ? 400 : 410);
    }
  });

  it('a refused password is shown on the form and sends nothing', async () => {
    const res = await signUp({ accountName: 'Short', email: 'gus@example.com', password: 'short' });
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('Password must be at least 12 characters');
    expect(page).toContain('value="gus@example.com"');
    const missing = await signUp({ email: 'gus@example.com', password: PASSWORD });
    expect(await missing.text()).toContain('Account name is required');
    await signUp({ accountName: 'Marker', email: 'marker@example.com', password: PASSWORD });
    await smtp.nextMessage('marker@example.com');
    expect(smtp.countTo('gus@example.com')).toBe(0);
  });

  it('the 6th email to one address within an hour is refused with 429 and Retry-After', async () => {
    for (let i = 0; i < 5; i++) expect((await signUp({ accountName: `T${i}`, email: 'hal@example.com', password: PASSWORD })).status).toBe(200);
    const refused = await signUp({ accountName: 'T6', email: 'hal@example.com', password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect(await refused.text()).toContain('Too many attempts');
  });

  it('the sign-in page links to sign-up and to password reset', async () => {
    const page = await (await fetch(`${t.baseUrl}/console/sign-in`)).text();
    expect(page).toContain('<a href="/console/sign-up">Create an account</a>');
    expect(page).toContain('<a href="/console/forgot-password">Forgot password?</a>');
  });
});

describe('SIGNUP=invite', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SIGNUP: 'invite', dbName: 't_sign_up_invite' });
  });
  afterAll(() => t?.close());

  it('the sign-up page and the verification link are 404, and sign-in does not offer it', async () => {
    expect((await fetch(`${t.baseUrl}/console/sign-up`)).status).toBe(404);
    expect((await fetch(`${t.baseUrl}/console/sign-up`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t) }, body: 'email=a%40b.co' })).status).toBe(404);
    expect((await fetch(`${t.baseUrl}/console/verify-email?token=${'A'.repeat(43)}`)).status).toBe(404);
    const signIn = await (await fetch(`${t.baseUrl}/console/sign-in`)).text();
    expect(signIn).not.toContain('Create an account');
    expect(signIn).toContain('Forgot password?');
  });
});

describe('when the SMTP server cannot be reached', () => {
  let t: TestApp;
  beforeAll(async () => {
    const gone = await startSmtpServer();
    await gone.close();
    t = await startTestApp({ SMTP_URL: gone.url, dbName: 't_sign_up_no_smtp' });
  });
  afterAll(() => t?.close());

  it('sign-up answers 503 email_unavailable with Retry-After, and creates nothing', async () => {
    const res = await fetch(`${t.baseUrl}/console/sign-up`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t) },
      body: new URLSearchParams({ accountName: 'Nope', email: 'ivy@example.com', password: PASSWORD }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await res.text()).toContain('Email could not be sent; try again later');
    expect(await t.connection.db!.collection('accounts').countDocuments({ name: 'Nope' })).toBe(0);
  });
});
