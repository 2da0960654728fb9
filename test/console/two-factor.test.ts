/**
 * TOTP two-factor sign-in over HTTP, with codes computed by otplib as an authenticator app would: set-up
 * confirmed by a code, the half-signed-in state that opens no page, replayed codes, recovery codes,
 * wrong codes counted by the sign-in throttle, and disabling with the password.
 */
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, createConsoleUser, sameOrigin, signIn, type ConsoleUser } from '../helpers/console.js';

/** The code an authenticator shows `offsetSteps` steps from now. */
const codeFor = (secret: string, offsetSteps = 0) => generate({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSteps * 30 });

describe('two-factor authentication', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  /** Sets up and enables 2FA for a signed-in user; returns the secret and the recovery codes. */
  async function enable(u: ConsoleUser, cookie: string): Promise<{ secret: string; recoveryCodes: string[] }> {
    const started = await consolePost(t, '/console/settings/two-factor/setup', cookie, {});
    expect(started.status).toBe(303);
    const setup = await (await consoleGet(t, '/console/settings/two-factor', cookie)).text();
    expect(setup).toMatch(/<img class="qr" src="data:image\/png;base64,[A-Za-z0-9+/=]+" width="200" height="200" alt="QR code for your authenticator app">/);
    const secret = /<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(setup)![1]!.replace(/ /g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const wrong = await consolePost(t, '/console/settings/two-factor/enable', cookie, { code: (Number(await codeFor(secret)) ^ 1).toString().padStart(6, '0') });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('That code is not right');
    const enabled = await consolePost(t, '/console/settings/two-factor/enable', cookie, { code: await codeFor(secret) });
    expect(enabled.status).toBe(200);
    const page = await enabled.text();
    const recoveryCodes = [...page.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]!);
    expect(new Set(recoveryCodes).size).toBe(10);
    const stored = await t.connection.db!.collection('console_users').findOne({ email: u.email });
    expect(JSON.stringify(stored)).not.toContain(recoveryCodes[0]);
    expect(stored?.recoveryCodes).toHaveLength(10);
    return { secret, recoveryCodes };
  }

  /** The password step: returns the challenge cookie the code step needs. */
  async function passwordStep(u: ConsoleUser, password = u.password): Promise<string> {
    const res = await signIn(t, u.email, password);
    expect(res.status).toBe(303);
    expect(res.res.headers.get('location')).toBe('/console/sign-in/verify');
    expect(res.cookie).toBeNull();
    return res.res.headers.getSetCookie().find((c) => c.startsWith('console_2fa='))!.split(';')[0]!;
  }

  function codeStep(challenge: string, code: string) {
    return fetch(`${t.baseUrl}/console/sign-in/verify`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: challenge, ...sameOrigin(t) },
      body: new URLSearchParams({ code }),
    });
  }
  const sessionOf = (res: Response) => res.headers.getSetCookie().find((c) => c.startsWith('console_session=') && !c.startsWith('console_session=;'))?.split(';')[0] ?? null;

  it('after set-up, sign-in asks for a code; the pending state opens no page; a code signs in once', async () => {
    const u = await createConsoleUser(t);
    const cookie = (await signIn(t, u.email, u.password)).cookie!;
    const { secret } = await enable(u, cookie);
    const audit = await t.connection.db!.collection('audit_entries').findOne({ event: 'user.2fa_enabled', accountId: u.accountId });
    expect(audit).toMatchObject({ actor: `console:${u.email}` });

    const challenge = await passwordStep(u);
    for (const path of ['/console', '/console/keys', '/console/settings']) {
      const res = await consoleGet(t, path, challenge);
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location')).toMatch(/^\/console\/sign-in/);
    }
    const form = await (await consoleGet(t, '/console/sign-in/verify', challenge)).text();
    expect(form).toContain('<label for="code">Authentication code</label>');
    expect(form).toContain('>Verify</button>');

    // The code that enabled it was accepted in this step: the next step's code signs in.
    const code = await codeFor(secret, 1);
    const ok = await codeStep(challenge, code);
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/console');
    const session = sessionOf(ok)!;
    expect((await consoleGet(t, '/console', session)).status).toBe(200);

    // The same code again, within its window: refused.
    const again = await passwordStep(u);
    const replay = await codeStep(again, code);
    expect(replay.status).toBe(401);
    expect(await replay.text()).toContain('Invalid authentication code');
    // The challenge was used up by the first sign-in.
    const used = await codeStep(challenge, await codeFor(secret, 1));
    expect(used.headers.get('location')).toBe('/console/sign-in');
    expect(sessionOf(used)).toBeNull();
  });

  it('a recovery code signs in once', async () => {
    const u = await createConsoleUser(t);
    const { recoveryCodes } = await enable(u, (await signIn(t, u.email, u.password)).cookie!);
    const first = await codeStep(await passwordStep(u), recoveryCodes[3]!.toUpperCase());
    expect(first.status).toBe(303);
    expect(sessionOf(first)).not.toBeNull();
    const settings = await (await consoleGet(t, '/console/settings', sessionOf(first))).text();
    expect(settings).toContain('9 of 10 recovery codes left');
    const reused = await codeStep(await passwordStep(u), recoveryCodes[3]!);
    expect(reused.status).toBe(401);
  });

  it('wrong codes count towards the sign-in throttle', async () => {
    const u = await createConsoleUser(t);
    const { secret } = await enable(u, (await signIn(t, u.email, u.password)).cookie!);
    const challenge = await passwordStep(u);
    for (let i = 0; i < 5; i++) expect((await codeStep(challenge, '000000')).status).toBe(401);
    const locked = await codeStep(challenge, await codeFor(secret, 1));
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await locked.text()).toContain('Too many attempts');
    // The right password does not reset the count of wrong codes.
    expect((await signIn(t, u.email, u.password)).status).toBe(429);
  });

  it('disabling needs the current password; then sign-in asks for no code', async () => {
    const u = await createConsoleUser(t);
    const cookie = (await signIn(t, u.email, u.password)).cookie!;
    await enable(u, cookie);
    const page = await (await consoleGet(t, '/console/settings', cookie)).text();
    expect(page).toContain('Disable two-factor authentication');
    const wrong = await consolePost(t, '/console/settings/two-factor/disable', cookie, { password: 'not my password at all' });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('Current password is incorrect');
    const off = await consolePost(t, '/console/settings/two-factor/disable', cookie, { password: u.password });
    expect(off.status).toBe(303);
    expect(await (await consoleGet(t, '/console/settings?done=2fa-off', cookie)).text()).toContain('Set up two-factor authentication');
    expect((await signIn(t, u.email, u.password)).cookie).not.toBeNull();
    const audit = await t.connection.db!.collection('audit_entries').findOne({ event: 'user.2fa_disabled', accountId: u.accountId });
    expect(audit).toMatchObject({ actor: `console:${u.email}` });
    expect(await t.services.console.twoFactor.isEnabled((await t.connection.db!.collection('console_users').findOne({ email: u.email }))!._id.toHexString())).toBe(false);
  });

  /** The hidden `next` field of a sign-in page's form, as a browser would post it back (null when absent). */
  const hiddenNext = (page: string) => /<input type="hidden" name="next" value="([^"]*)">/.exec(page)?.[1]?.replace(/&amp;/g, '&') ?? null;

  /**
   * Signing in as a browser does from `path` while signed out: the redirect to the sign-in form, the
   * form posted with its hidden fields, the code page, and the code posted with its hidden fields.
   * Returns where the code step sends the browser, and its session.
   */
  async function signInFrom(u: ConsoleUser, path: string, code: () => Promise<string>): Promise<{ location: string | null; session: string | null }> {
    const opened = await consoleGet(t, path, null);
    expect(opened.status).toBe(303);
    const signInPath = opened.headers.get('location')!;
    const form = await (await consoleGet(t, signInPath, null)).text();
    const password = await fetch(`${t.baseUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t) },
      body: new URLSearchParams({ email: u.email, password: u.password, ...(hiddenNext(form) === null ? {} : { next: hiddenNext(form)! }) }),
    });
    expect(password.status).toBe(303);
    const codePath = password.headers.get('location')!;
    expect(codePath).toMatch(/^\/console\/sign-in\/verify(\?|$)/);
    const challenge = password.headers.getSetCookie().find((c) => c.startsWith('console_2fa='))!.split(';')[0]!;
    const codePage = await (await consoleGet(t, codePath, challenge)).text();
    expect(codePage).toContain('<label for="code">Authentication code</label>');
    const next = hiddenNext(codePage);
    const verified = await fetch(`${t.baseUrl}/console/sign-in/verify`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: challenge, ...sameOrigin(t) },
      body: new URLSearchParams({ code: await code(), ...(next === null ? {} : { next }) }),
    });
    expect(verified.status).toBe(303);
    return { location: verified.headers.get('location'), session: sessionOf(verified) };
  }

  it('after the code, or a recovery code, the user lands on the console page they had opened', async () => {
    const u = await createConsoleUser(t);
    const { secret, recoveryCodes } = await enable(u, (await signIn(t, u.email, u.password)).cookie!);

    const byCode = await signInFrom(u, '/console/usage?days=7', () => codeFor(secret, 1));
    expect(byCode.location).toBe('/console/usage?days=7');
    expect((await consoleGet(t, byCode.location!, byCode.session)).status).toBe(200);

    const byRecovery = await signInFrom(u, '/console/audit', async () => recoveryCodes[0]!);
    expect(byRecovery.location).toBe('/console/audit');
    expect((await consoleGet(t, '/console/audit', byRecovery.session)).status).toBe(200);
  });

  it('a wrong code keeps the page to return to; an expired challenge sends back to sign-in with it', async () => {
    const u = await createConsoleUser(t);
    const { secret } = await enable(u, (await signIn(t, u.email, u.password)).cookie!);
    const password = await consolePost(t, '/console/sign-in', null, { email: u.email, password: u.password, next: '/console/keys' });
    expect(password.headers.get('location')).toBe('/console/sign-in/verify?next=%2Fconsole%2Fkeys');
    const challenge = password.headers.getSetCookie().find((c) => c.startsWith('console_2fa='))!.split(';')[0]!;
    const wrong = await consolePost(t, '/console/sign-in/verify', challenge, { code: '000000', next: '/console/keys' });
    expect(wrong.status).toBe(401);
    expect(hiddenNext(await wrong.text())).toBe('/console/keys');
    const right = await consolePost(t, '/console/sign-in/verify', challenge, { code: await codeFor(secret, 1), next: '/console/keys' });
    expect(right.headers.get('location')).toBe('/console/keys');
    const used = await consolePost(t, '/console/sign-in/verify', challenge, { code: await codeFor(secret, 1), next: '/console/keys' });
    expect(used.headers.get('location')).toBe('/console/sign-in?next=%2Fconsole%2Fkeys');
  });

  it('an off-site or malformed next is not followed: the code step lands on the default page', async () => {
    const u = await createConsoleUser(t);
    const { secret, recoveryCodes } = await enable(u, (await signIn(t, u.email, u.password)).cookie!);
    const nexts = ['https://evil.example/console', '//evil.example/console', '/console//evil.example', '/console/../api/me', '/api/me', '/console\\evil', 'javascript:alert(1)'];
    for (const [i, next] of nexts.entries()) {
      const password = await consolePost(t, '/console/sign-in', null, { email: u.email, password: u.password, next });
      expect(password.headers.get('location'), next).toBe('/console/sign-in/verify');
      const challenge = password.headers.getSetCookie().find((c) => c.startsWith('console_2fa='))!.split(';')[0]!;
      expect(hiddenNext(await (await consoleGet(t, `/console/sign-in/verify?next=${encodeURIComponent(next)}`, challenge)).text()), next).toBeNull();
      // Posted straight to the code step (a forged form), it is refused there too. A TOTP code is
      // accepted once per time step, so the later sign-ins use recovery codes.
      const code = i === 0 ? await codeFor(secret, 1) : recoveryCodes[i]!;
      const verified = await consolePost(t, '/console/sign-in/verify', challenge, { code, next });
      expect(verified.status, next).toBe(303);
      expect(verified.headers.get('location'), next).toBe('/console');
      expect(sessionOf(verified), next).not.toBeNull();
    }
  });

  it('a code step without a challenge, or with a made-up one, goes back to sign-in', async () => {
    expect((await consoleGet(t, '/console/sign-in/verify', null)).headers.get('location')).toBe('/console/sign-in');
    const res = await codeStep(`console_2fa=${'A'.repeat(43)}`, '123456');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in');
  });
});
