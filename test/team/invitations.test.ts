/**
 * Invitations end to end with a real SMTP server on loopback (test/helpers/smtp.ts): the email the
 * gateway really sent, its absolute link, and every way of accepting it, under SIGNUP=invite (the link
 * works under either setting). Two concurrent uses of one link: exactly one joins.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, sameOrigin, signIn } from '../helpers/console.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';
import { addMember, type TestMember } from '../helpers/team.js';

let t: TestApp;
let smtp: TestSmtpServer;
let accountId: string;
let owner: TestMember;
const PUBLIC = 'https://console.example.com';

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ SMTP_URL: smtp.url, SIGNUP: 'invite', PUBLIC_BASE_URL: PUBLIC, ALLOWED_HOSTS: '127.0.0.1,localhost,console.example.com' });
  accountId = (await t.createAccountWithKey({ name: 'Acme' })).accountId;
  owner = await addMember(t, accountId, 'owner');
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

async function invite(by: TestMember, email: string, role: string) {
  return consolePost(t, '/console/team/invitations', by.cookie, { email, role });
}

/** The link in the email, on this test server (the email's is absolute, on PUBLIC_BASE_URL). */
async function linkFor(email: string): Promise<{ path: string; token: string }> {
  const mail = await smtp.nextMessage(email);
  const link = mail.links.find((l) => l.includes('/console/invitations/accept'))!;
  expect(link.startsWith(`${PUBLIC}/console/invitations/accept?token=`)).toBe(true);
  expect(mail.html).toContain(link.replace(/&/g, '&amp;'));
  const url = new URL(link);
  return { path: `${url.pathname}${url.search}`, token: url.searchParams.get('token')! };
}

function join(token: string, password: string, cookie?: string) {
  return fetch(`${t.baseUrl}/console/invitations/accept`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...sameOrigin(t), 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams({ token, password }),
  });
}

const roleOf = async (email: string) => (await t.services.console.team.view(accountId)).members.find((m) => m.email === email)?.role ?? null;

describe('invitations', () => {
  it('a new person: the email, the pending row, Password and Join, signed in as a member', async () => {
    const res = await invite(owner, 'New.Person@Example.com', 'developer');
    expect(res.status).toBe(303);
    const mail = smtp.messages.at(-1)!;
    expect(mail.subject).toBe('You are invited to Acme on credit-gateway');
    expect(mail.text).toContain(owner.email);
    const team = await (await consoleGet(t, '/console/team', owner.cookie)).text();
    expect(team).toContain('new.person@example.com');
    expect(team).toContain('1 pending invitation');
    const { path, token } = await linkFor('new.person@example.com');

    const page = await consoleGet(t, path, null);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('Join “Acme”');
    expect(html).toMatch(/<label for="password">Password<\/label>/);
    const formCookie = page.headers.getSetCookie().find((c) => c.startsWith('console_form='))!.split(';')[0]!;
    const weak = await join(token, 'short', formCookie);
    expect(weak.status).toBe(400);
    expect(await weak.text()).toContain('Password must be at least 12 characters');

    const joined = await join(token, 'a brand new long password', formCookie);
    expect(joined.status).toBe(303);
    expect(joined.headers.get('location')).toBe('/console');
    const cookie = joined.headers.getSetCookie().find((c) => /^(__Host-)?console_session=/.test(c))!.split(';')[0]!;
    expect((await consoleGet(t, '/console/keys', cookie)).status).toBe(200);
    expect(await roleOf('new.person@example.com')).toBe('developer');
    expect(await (await consoleGet(t, '/console/team', owner.cookie)).text()).toContain('No pending invitations.');
    // Used: the link now says so and creates nothing.
    const again = await consoleGet(t, path, null);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain('This link has expired or was already used');
    expect((await signIn(t, 'new.person@example.com', 'a brand new long password')).status).toBe(303);
  });

  it('two concurrent uses of one link: exactly one joins, one user exists', async () => {
    await invite(owner, 'racer@example.com', 'viewer');
    const { token } = await linkFor('racer@example.com');
    const results = await Promise.all([join(token, 'first racer password'), join(token, 'second racer password')]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([303, 410]);
    expect(await t.connection.db!.collection('console_users').countDocuments({ email: 'racer@example.com' })).toBe(1);
    const winner = results.find((r) => r.status === 303)!;
    expect(winner.headers.get('location')).toBe('/console');
  });

  it('a known email signs in first, then joins; a signed-in user with that email joins at once', async () => {
    const { accountId: otherAccount } = await t.createAccountWithKey({ name: 'Other' });
    const known = await addMember(t, otherAccount, 'owner');
    await invite(owner, known.email, 'admin');
    const { path } = await linkFor(known.email);
    const signedOut = await consoleGet(t, path, null);
    expect(signedOut.status).toBe(303);
    const next = signedOut.headers.get('location')!;
    expect(next).toBe(`/console/sign-in?next=${encodeURIComponent(path)}`);
    const session = await signIn(t, known.email, known.password, {});
    const signInWithNext = await fetch(`${t.baseUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t) },
      body: new URLSearchParams({ email: known.email, password: known.password, next: path }),
    });
    expect(signInWithNext.headers.get('location')).toBe(path);
    const joined = await consoleGet(t, path, session.cookie);
    expect(joined.status).toBe(303);
    expect(await roleOf(known.email)).toBe('admin');
    // The session now works in Acme, with the switcher to go back.
    const home = await (await consoleGet(t, '/console', session.cookie)).text();
    expect(home).toContain('Switch account');
    expect(home).toContain('Acme');
  });

  it('someone signed in with another email is told whose invitation it is; nothing joins', async () => {
    await invite(owner, 'third@example.com', 'viewer');
    const { path } = await linkFor('third@example.com');
    const page = await consoleGet(t, path, owner.cookie);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Invitation for third@example.com');
    expect(await roleOf('third@example.com')).toBeNull();
  });

  it('Revoke ends the link; revoking is audited with actor and IP', async () => {
    await invite(owner, 'revoked@example.com', 'viewer');
    const { path } = await linkFor('revoked@example.com');
    const pending = await t.services.console.invitations.pending(accountId);
    const id = pending.find((p) => p.email === 'revoked@example.com')!.id;
    expect((await consolePost(t, `/console/team/invitations/${id}/revoke`, owner.cookie, {})).status).toBe(303);
    expect((await consoleGet(t, path, null)).status).toBe(410);
    expect((await consolePost(t, `/console/team/invitations/${id}/revoke`, owner.cookie, {})).status).toBe(404);
    const entries = [];
    for await (const e of t.services.audit.exportForAccount(accountId)) entries.push(e);
    const revoked = entries.find((e) => e.event === 'member.invitation_revoked')!;
    expect(revoked).toMatchObject({ actor: `console:${owner.email}`, ip: expect.stringMatching(/127\.0\.0\.1/), details: { email: 'revoked@example.com' } });
    expect(entries.filter((e) => e.event === 'member.invited').length).toBeGreaterThan(3);
    expect(entries.find((e) => e.event === 'member.joined')).toMatchObject({ details: { via: 'invitation' } });
  });

  it('an admin cannot invite an owner; a member already in the account is not invited', async () => {
    const admin = await addMember(t, accountId, 'admin');
    const res = await invite(admin, 'boss@example.com', 'owner');
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('You do not have permission to do that');
    const already = await invite(owner, admin.email, 'viewer');
    expect(already.status).toBe(409);
    expect(await already.text()).toContain('That person is already a member of this account');
    expect(smtp.countTo('boss@example.com')).toBe(0);
  });

  it('invitation emails are throttled like every email: the 6th to one address in an hour is 429', async () => {
    for (let i = 0; i < 5; i++) expect((await invite(owner, 'often@example.com', 'viewer')).status).toBe(303);
    const sixth = await invite(owner, 'often@example.com', 'viewer');
    expect(sixth.status).toBe(429);
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await sixth.text()).toContain('Too many attempts');
    // Each new invitation replaced the last: one live link.
    expect((await t.services.console.invitations.pending(accountId)).filter((p) => p.email === 'often@example.com')).toHaveLength(1);
  });
});
