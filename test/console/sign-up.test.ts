/**
 * Sign-up over HTTP, with the emails read from a real SMTP server on loopback: nothing exists until
 * the link is opened; the answer is the same for a taken address; SIGNUP=invite removes the doors.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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

  /** Signs `email` up `names.length` times (one email each) and returns the verification links, in order. */
  async function linksFor(email: string, names: string[]): Promise<string[]> {
    const links: string[] = [];
    for (const accountName of names) {
      expect((await signUp({ accountName, email, password: PASSWORD })).status).toBe(200);
      links.push(onThisApp((await smtp.nextMessage(email)).links[0]!));
    }
    return links;
  }

  /** Opens every link at once; returns the session cookies given and the statuses. */
  async function openAll(links: string[]): Promise<{ sessions: string[]; statuses: number[]; pages: string[] }> {
    const answers = await Promise.all(links.map((link) => fetch(link, { redirect: 'manual' })));
    const pages = await Promise.all(answers.map((a) => a.text()));
    const sessions = answers.flatMap((a) => a.headers.getSetCookie().filter((c) => c.startsWith('console_session=')).map((c) => c.split(';')[0]!));
    return { sessions, statuses: answers.map((a) => a.status), pages };
  }

  /** One user for the address, owner of one account that has the sign-up credits once; no account of these names without a member. */
  async function expectOneAccount(email: string, names: string[]): Promise<string> {
    const found = await users().find({ email }).toArray();
    expect(found).toHaveLength(1);
    const user = found[0]!;
    const made = await accounts().find({ name: { $in: names } }).toArray();
    expect(made.map((a) => a._id.toHexString())).toEqual([user.accountId.toHexString()]);
    const account = made[0]!;
    expect(user.memberships).toEqual([expect.objectContaining({ accountId: account._id, role: 'owner' })]);
    expect(account.credits).toBe(25);
    const audit = await t.connection.db!.collection('audit_entries').find({ accountId: account._id.toHexString() }).toArray();
    expect(audit.filter((e) => e.event === 'credits.granted').map((e) => e.amount)).toEqual([25]);
    expect(audit.filter((e) => e.event === 'account.created')).toHaveLength(1);
    expect(audit.filter((e) => e.event === 'user.created')).toHaveLength(1);
    return account._id.toHexString();
  }

  it('two links for one address opened ten times each, all at once, make one account with one owner and one grant', async () => {
    // A few rounds: each one a fresh address racing its own two links.
    for (const round of [1, 2, 3]) {
      const email = `race-${round}@example.com`;
      const names = [`Race ${round} A`, `Race ${round} B`];
      const [first, second] = await linksFor(email, names);
      const opened = await openAll(Array.from({ length: 20 }, (_, i) => (i % 2 ? first! : second!)));
      // One opener is signed in; every other one is told the link expired, as for a used link.
      expect(opened.sessions).toHaveLength(1);
      expect([...opened.statuses].sort()).toEqual([303, ...Array<number>(19).fill(410)]);
      for (const [i, page] of opened.pages.entries()) if (opened.statuses[i] === 410) expect(page).toContain('This link has expired or was already used');
      const accountId = await expectOneAccount(email, names);
      const overview = await consoleGet(t, '/console', opened.sessions[0]!);
      expect(overview.status).toBe(200);
      // Both links are spent: opening either again creates nothing.
      expect((await openAll([first!, second!])).statuses).toEqual([410, 410]);
      expect(await expectOneAccount(email, names)).toBe(accountId);
    }
  });

  it('one link opened ten times at once makes one account and signs in once', async () => {
    const [link] = await linksFor('same-link@example.com', ['Same Link']);
    const opened = await openAll(Array<string>(10).fill(link!));
    expect(opened.sessions).toHaveLength(1);
    expect([...opened.statuses].sort()).toEqual([303, ...Array<number>(9).fill(410)]);
    await expectOneAccount('same-link@example.com', ['Same Link']);
  });

  it('a crash between the writes is finished by opening the link again: one account, one owner, one grant', async () => {
    const userService = t.services.console.users;
    for (const [n, [step, crash]] of ([
      ['after the account, before its owner', () => vi.spyOn(userService, 'createOwner').mockRejectedValueOnce(new Error('crash'))],
      ['after the owner, before the credits', () => vi.spyOn(t.services.credits, 'grant').mockRejectedValueOnce(new Error('crash'))],
    ] as const).entries()) {
      const email = `crash-${n}@example.com`;
      const [link] = await linksFor(email, [`Crash ${step}`]);
      const spy = crash();
      const crashed = await fetch(link!, { redirect: 'manual' });
      expect(crashed.status, step).toBe(500);
      spy.mockRestore();
      const again = await fetch(link!, { redirect: 'manual' });
      expect(again.status, step).toBe(303);
      expect(again.headers.getSetCookie().some((c) => c.startsWith('console_session=')), step).toBe(true);
      await expectOneAccount(email, [`Crash ${step}`]);
    }
  });

  it('a link opened after the address got a user another way (the CLI) says it expired and creates nothing', async () => {
    const [link] = await linksFor('cli-first@example.com', ['Too Late']);
    const other = await t.createAccountWithKey({ credits: 0 });
    await t.services.console.users.create(other.accountId, 'cli-first@example.com', PASSWORD, { actor: 'test', ip: null, host: 'test' });
    const opened = await fetch(link!, { redirect: 'manual' });
    expect(opened.status).toBe(410);
    expect(await accounts().countDocuments({ name: 'Too Late' })).toBe(0);
    expect(await t.connection.db!.collection('signup_claims').countDocuments({ _id: 'cli-first@example.com' as never })).toBe(0);
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
