/**
 * Sign-up over HTTP, with the emails read from a real SMTP server on loopback: nothing exists until
 * the link is opened; the link signs in without more only in the browser that sent the form (its
 * sign-up cookie), anywhere else after the sign-up password; the answer is the same for a taken
 * address; SIGNUP=invite removes the doors.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, sameOrigin, signIn } from '../helpers/console.js';
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

  /**
   * Each call from its own client address, so that the per-IP email limit stays out of the way;
   * `browser` is the sign-up cookie of an earlier form from the same browser.
   */
  function signUp(form: Record<string, string>, ip = `203.0.113.${++ipCounter}`, browser?: string) {
    return fetch(`${t.baseUrl}/console/sign-up`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip, ...sameOrigin(t), origin: 'http://gateway.test:4000', ...(browser ? { cookie: browser } : {}) },
      body: new URLSearchParams(form),
    });
  }
  /** The cookie that marks the browser that sent the form (`name=value`). */
  function signUpCookie(res: Response): string {
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('console_signup='));
    expect(cookie, 'the sign-up answer sets the browser cookie').toBeDefined();
    expect(cookie).toMatch(/HttpOnly/i);
    // A link clicked in a mail client is a cross-site navigation: a Strict cookie would not come along.
    expect(cookie).toMatch(/SameSite=Lax/i);
    return cookie!.split(';')[0]!;
  }
  const onThisApp = (link: string) => link.replace('http://gateway.test:4000', t.baseUrl);
  const open = (link: string, browser?: string) => fetch(link, { redirect: 'manual', headers: browser ? { cookie: browser } : {} });

  it('a new address gets a verification link on PUBLIC_BASE_URL, and nothing is created before it is opened', async () => {
    const res = await signUp({ accountName: 'Acme Frontend', email: 'Dana@Example.com', password: PASSWORD });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<h1>Check your email</h1>');
    const mail = await smtp.nextMessage('dana@example.com');
    expect(mail.subject).toBe('Confirm your email to create your account');
    expect(mail.links[0]).toMatch(/^http:\/\/gateway\.test:4000\/console\/verify-email\?token=[A-Za-z0-9_-]{43}$/);
    expect(await accounts().countDocuments({ name: 'Acme Frontend' })).toBe(0);
    expect(await users().countDocuments({ email: 'dana@example.com' })).toBe(0);
  });

  it('the email says nothing the requester typed but the address it is sent to', async () => {
    const lure = 'URGENT: your payment failed, call +1 555 0100 or visit evil.example now';
    await signUp({ accountName: lure, email: 'lure@example.com', password: PASSWORD });
    const mail = await smtp.nextMessage('lure@example.com');
    for (const part of ['URGENT', '555 0100', 'evil.example']) {
      expect(mail.text).not.toContain(part);
      expect(mail.html).not.toContain(part);
    }
    expect(mail.subject).toBe('Confirm your email to create your account');
  });

  it('opening the link in the browser that sent the form creates the account with SIGNUP_CREDITS and its owner, signs in and shows the Overview', async () => {
    const browser = signUpCookie(await signUp({ accountName: 'Beta Team', email: 'eli@example.com', password: PASSWORD }));
    const link = onThisApp((await smtp.nextMessage('eli@example.com')).links[0]!);
    const opened = await open(link, browser);
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
    const again = await open(link, browser);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain('This link has expired or was already used');
    expect(await accounts().countDocuments({ name: 'Beta Team' })).toBe(1);
  });

  /**
   * Signs `email` up `names.length` times (one email each) from one browser; returns the verification
   * links, in order, and that browser's sign-up cookie.
   */
  async function linksFor(email: string, names: string[]): Promise<{ links: string[]; browser: string }> {
    const links: string[] = [];
    let browser: string | undefined;
    for (const accountName of names) {
      const res = await signUp({ accountName, email, password: PASSWORD }, undefined, browser);
      expect(res.status).toBe(200);
      const cookie = signUpCookie(res);
      // The same browser keeps its mark, so that every link it asked for works there.
      if (browser) expect(cookie).toBe(browser);
      browser = cookie;
      links.push(onThisApp((await smtp.nextMessage(email)).links[0]!));
    }
    return { links, browser: browser! };
  }

  /** Opens every link at once from the browser `browser`; returns the session cookies given and the statuses. */
  async function openAll(links: string[], browser: string): Promise<{ sessions: string[]; statuses: number[]; pages: string[] }> {
    const answers = await Promise.all(links.map((link) => open(link, browser)));
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
      const { links: [first, second], browser } = await linksFor(email, names);
      const opened = await openAll(Array.from({ length: 20 }, (_, i) => (i % 2 ? first! : second!)), browser);
      // One opener is signed in; every other one is told the link expired, as for a used link.
      expect(opened.sessions).toHaveLength(1);
      expect([...opened.statuses].sort()).toEqual([303, ...Array<number>(19).fill(410)]);
      for (const [i, page] of opened.pages.entries()) if (opened.statuses[i] === 410) expect(page).toContain('This link has expired or was already used');
      const accountId = await expectOneAccount(email, names);
      const overview = await consoleGet(t, '/console', opened.sessions[0]!);
      expect(overview.status).toBe(200);
      // Both links are spent: opening either again creates nothing.
      expect((await openAll([first!, second!], browser)).statuses).toEqual([410, 410]);
      expect(await expectOneAccount(email, names)).toBe(accountId);
    }
  });

  it('one link opened ten times at once makes one account and signs in once', async () => {
    const { links: [link], browser } = await linksFor('same-link@example.com', ['Same Link']);
    const opened = await openAll(Array<string>(10).fill(link!), browser);
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
      const { links: [link], browser } = await linksFor(email, [`Crash ${step}`]);
      const spy = crash();
      const crashed = await open(link!, browser);
      expect(crashed.status, step).toBe(500);
      spy.mockRestore();
      const again = await open(link!, browser);
      expect(again.status, step).toBe(303);
      expect(again.headers.getSetCookie().some((c) => c.startsWith('console_session=')), step).toBe(true);
      await expectOneAccount(email, [`Crash ${step}`]);
    }
  });

  it('a link opened after the address got a user another way (the CLI) says it expired and creates nothing', async () => {
    const { links: [link], browser } = await linksFor('cli-first@example.com', ['Too Late']);
    const other = await t.createAccountWithKey({ credits: 0 });
    await t.services.console.users.create(other.accountId, 'cli-first@example.com', PASSWORD, { actor: 'test', ip: null, host: 'test' });
    const opened = await open(link!, browser);
    expect(opened.status).toBe(410);
    expect(await accounts().countDocuments({ name: 'Too Late' })).toBe(0);
    expect(await t.connection.db!.collection('signup_claims').countDocuments({ _id: 'cli-first@example.com' as never })).toBe(0);
  });

  it('a taken address gets the same answer, and an email with a reset link instead', async () => {
    const browser = signUpCookie(await signUp({ accountName: 'First', email: 'fay@example.com', password: PASSWORD }));
    await open(onThisApp((await smtp.nextMessage('fay@example.com')).links[0]!), browser);
    const res = await signUp({ accountName: 'Second', email: 'fay@example.com', password: 'another long password here' });
    expect(res.status).toBe(200);
    // Set for a taken address as for a new one: the answer does not tell them apart.
    signUpCookie(res);
    expect(await res.text()).toContain('<h1>Check your email</h1>');
    const mail = await smtp.nextMessage('fay@example.com');
    expect(mail.subject).toBe('You already have an account');
    expect(mail.links[0]).toMatch(/^http:\/\/gateway\.test:4000\/console\/reset-password\?token=/);
    expect(await accounts().countDocuments({ name: 'Second' })).toBe(0);
  });

  /** Posts the password form of a link opened outside the sign-up browser. */
  function finish(link: string, password: string, ip: string, browser?: string) {
    const token = new URL(link).searchParams.get('token')!;
    return consolePost(t, '/console/verify-email', browser ?? null, { token, password }, { ...sameOrigin(t), 'x-forwarded-for': ip });
  }

  it('opened in another browser, the link asks for the sign-up password first, and creates nothing until it is given', async () => {
    const senders = signUpCookie(await signUp({ accountName: 'Kim Co', email: 'kim@example.com', password: PASSWORD }));
    const link = onThisApp((await smtp.nextMessage('kim@example.com')).links[0]!);
    // Another browser: none, or one that signed up for something else.
    const elsewhere = signUpCookie(await signUp({ accountName: 'Other', email: 'other-browser@example.com', password: PASSWORD }));
    expect(elsewhere).not.toBe(senders);
    for (const browser of [undefined, elsewhere]) {
      const asked = await open(link, browser);
      expect(asked.status).toBe(200);
      expect(asked.headers.getSetCookie().some((c) => c.startsWith('console_session='))).toBe(false);
      const page = await asked.text();
      expect(page).toContain('<label for="password">Password</label>');
      expect(page).toContain('Finish sign-up</button>');
      // The token goes in the form's body, not back into a URL.
      expect(page).toMatch(/<form method="post" action="\/console\/verify-email"/);
    }
    expect(await accounts().countDocuments({ name: 'Kim Co' })).toBe(0);
    expect(await users().countDocuments({ email: 'kim@example.com' })).toBe(0);

    const finished = await finish(link, PASSWORD, '198.51.100.7');
    expect(finished.status).toBe(303);
    expect(finished.headers.get('location')).toBe('/console');
    const session = finished.headers.getSetCookie().find((c) => c.startsWith('console_session='))!.split(';')[0]!;
    expect((await consoleGet(t, '/console', session)).status).toBe(200);
    expect((await accounts().findOne({ name: 'Kim Co' }))?.credits).toBe(25);
    // Used: the sender's browser is told so too.
    expect((await open(link, senders)).status).toBe(410);
  });

  it('a wrong sign-up password says Incorrect password and creates nothing, however often, and the sign-in throttle counts it', async () => {
    // Someone signs up with another person's address and their own password; that person opens the link.
    await signUp({ accountName: 'Hijack', email: 'victim@example.com', password: PASSWORD });
    const link = onThisApp((await smtp.nextMessage('victim@example.com')).links[0]!);
    const ip = '198.51.100.8';
    for (let i = 0; i < 5; i++) {
      const wrong = await finish(link, `not the password, try ${i}`, ip);
      expect(wrong.status).toBe(401);
      const page = await wrong.text();
      expect(page).toContain('Incorrect password');
      expect(page).toContain('Finish sign-up</button>');
      expect(wrong.headers.getSetCookie().some((c) => c.startsWith('console_session='))).toBe(false);
    }
    // Locked now, for the right password too: no way to try more.
    const locked = await finish(link, PASSWORD, ip);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await locked.text()).toContain('Too many attempts');
    // The same throttle as signing in: the address is locked there as well.
    expect((await signIn(t, 'victim@example.com', PASSWORD, { 'x-forwarded-for': '198.51.100.9' })).status).toBe(429);
    expect(await accounts().countDocuments({ name: 'Hijack' })).toBe(0);
    expect(await users().countDocuments({ email: 'victim@example.com' })).toBe(0);
    expect(await t.connection.db!.collection('signup_claims').countDocuments({ _id: 'victim@example.com' as never })).toBe(0);
    const failures = await t.connection.db!.collection('audit_entries').find({ event: 'console.sign_in_failed', actor: 'console:victim@example.com' }).toArray();
    expect(failures.filter((e) => e.details?.reason === 'wrong_password' && e.details?.step === 'sign_up')).toHaveLength(5);
  });

  it('the password form refuses a missing, malformed or used token as expired, and a missing password as incorrect', async () => {
    for (const token of ['', 'x', 'A'.repeat(43)]) {
      const res = await consolePost(t, '/console/verify-email', null, { token, password: PASSWORD }, { ...sameOrigin(t), 'x-forwarded-for': '198.51.100.10' });
      expect(res.status, token).toBe(410);
      expect(await res.text()).toContain('This link has expired or was already used');
    }
    await signUp({ accountName: 'No Password', email: 'nopass@example.com', password: PASSWORD });
    const link = onThisApp((await smtp.nextMessage('nopass@example.com')).links[0]!);
    const token = new URL(link).searchParams.get('token')!;
    const empty = await consolePost(t, '/console/verify-email', null, { token }, { ...sameOrigin(t), 'x-forwarded-for': '198.51.100.11' });
    expect(empty.status).toBe(401);
    expect(await empty.text()).toContain('Incorrect password');
    // A cross-site post is refused before anything is read.
    const cross = await consolePost(t, '/console/verify-email', null, { token, password: PASSWORD }, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' });
    expect(cross.status).toBe(403);
    expect(await accounts().countDocuments({ name: 'No Password' })).toBe(0);
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
