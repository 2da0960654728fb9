/**
 * The Team page over HTTP against a real gateway and database: role changes and their limits, removal
 * (sessions in the account end at once, keys stay), leaving, the last-owner rule (also when two owners
 * demote each other at the same time), the owners' two-factor requirement, and the account switcher.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost } from '../helpers/console.js';
import { addMember, enableTwoFactor } from '../helpers/team.js';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const roleOf = async (accountId: string, userId: string) => (await t.services.console.team.view(accountId)).members.find((m) => m.userId === userId)?.role ?? null;
/** The account's audit entries of one event, newest first. */
async function audited(accountId: string, event: string) {
  const out: Awaited<ReturnType<typeof collect>> = await collect(accountId);
  return out.filter((e) => e.event === event).reverse();
}
async function collect(accountId: string) {
  const out = [];
  for await (const e of t.services.audit.exportForAccount(accountId)) out.push(e);
  return out;
}
const json = { accept: 'application/json', 'sec-fetch-site': 'same-origin' };

describe('roles', () => {
  it('an admin changes a developer to viewer; the change holds on the next request', async () => {
    const { accountId } = await t.createAccountWithKey();
    await addMember(t, accountId, 'owner');
    const admin = await addMember(t, accountId, 'admin');
    const dev = await addMember(t, accountId, 'developer');
    expect((await consoleGet(t, '/console/playground', dev.cookie)).status).toBe(200);
    const res = await consolePost(t, `/console/team/members/${dev.userId}/role`, admin.cookie, { role: 'viewer' });
    expect(res.status).toBe(303);
    expect(await roleOf(accountId, dev.userId)).toBe('viewer');
    expect((await consoleGet(t, '/console/playground', dev.cookie)).status).toBe(403);
    expect((await audited(accountId, 'member.role_changed'))[0]).toMatchObject({ actor: `console:${admin.email}`, ip: expect.stringMatching(/127\.0\.0\.1/), details: { userId: dev.userId, from: 'developer', to: 'viewer' } });
  });

  it('an admin can neither make nor unmake an owner (403, nothing changed); an owner can', async () => {
    const { accountId } = await t.createAccountWithKey();
    const owner = await addMember(t, accountId, 'owner');
    const admin = await addMember(t, accountId, 'admin');
    const dev = await addMember(t, accountId, 'developer');
    for (const [target, role] of [
      [dev.userId, 'owner'],
      [owner.userId, 'viewer'],
    ] as const) {
      const res = await consolePost(t, `/console/team/members/${target}/role`, admin.cookie, { role });
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('You do not have permission to do that');
    }
    expect(await roleOf(accountId, dev.userId)).toBe('developer');
    expect(await roleOf(accountId, owner.userId)).toBe('owner');
    expect((await consolePost(t, `/console/team/members/${dev.userId}/role`, owner.cookie, { role: 'owner' })).status).toBe(303);
    expect(await roleOf(accountId, dev.userId)).toBe('owner');
  });

  it('a role that is not one is a 400 naming the field', async () => {
    const { accountId } = await t.createAccountWithKey();
    const owner = await addMember(t, accountId, 'owner');
    const dev = await addMember(t, accountId, 'developer');
    const res = await consolePost(t, `/console/team/members/${dev.userId}/role`, owner.cookie, { role: 'superuser' }, { ...json });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_request', error: expect.stringContaining('role') });
  });
});

describe('the last owner', () => {
  it('cannot be demoted, removed or leave: the page says why and nothing changes', async () => {
    const { accountId } = await t.createAccountWithKey();
    const owner = await addMember(t, accountId, 'owner');
    const res = await consolePost(t, `/console/team/members/${owner.userId}/role`, owner.cookie, { role: 'admin' });
    expect(res.status).toBe(409);
    expect(await res.text()).toContain('An account needs at least one owner');
    const left = await consolePost(t, '/console/team/leave', owner.cookie, {});
    expect(left.status).toBe(409);
    expect(await left.text()).toContain('An account needs at least one owner');
    expect(await roleOf(accountId, owner.userId)).toBe('owner');
    expect((await consoleGet(t, '/console/team', owner.cookie)).status).toBe(200);
  });

  it('two owners demoting each other at the same time leave at least one owner', async () => {
    for (let round = 0; round < 5; round++) {
      const { accountId } = await t.createAccountWithKey();
      const a = await addMember(t, accountId, 'owner');
      const b = await addMember(t, accountId, 'owner');
      const [ra, rb] = await Promise.all([
        consolePost(t, `/console/team/members/${b.userId}/role`, a.cookie, { role: 'admin' }, json),
        consolePost(t, `/console/team/members/${a.userId}/role`, b.cookie, { role: 'admin' }, json),
      ]);
      const statuses = [ra.status, rb.status].sort();
      expect(statuses, `round ${round}`).toEqual([200, 409]);
      const roles = [await roleOf(accountId, a.userId), await roleOf(accountId, b.userId)];
      expect(roles.filter((r) => r === 'owner'), `round ${round}`).toHaveLength(1);
    }
  });

  it('two owners removing each other at the same time leave one', async () => {
    const { accountId } = await t.createAccountWithKey();
    const a = await addMember(t, accountId, 'owner');
    const b = await addMember(t, accountId, 'owner');
    await Promise.all([
      consolePost(t, `/console/team/members/${b.userId}/remove`, a.cookie, {}, json),
      consolePost(t, `/console/team/members/${a.userId}/remove`, b.cookie, {}, json),
    ]);
    const owners = (await t.services.console.team.view(accountId)).members.filter((m) => m.role === 'owner');
    expect(owners).toHaveLength(1);
  });
});

describe('removing and leaving', () => {
  it('removal ends the member’s sessions in that account at once; the keys they created stay', async () => {
    const { accountId } = await t.createAccountWithKey();
    const owner = await addMember(t, accountId, 'owner');
    const dev = await addMember(t, accountId, 'developer');
    const created = await consolePost(t, '/console/keys', dev.cookie, { name: 'made by dev' }, { ...json });
    expect(created.status).toBe(201);
    const keyId = ((await created.json()) as { id: string }).id;
    const page = await consoleGet(t, `/console/team/members/${dev.userId}/remove`, owner.cookie);
    expect(await page.text()).toContain('Remove member');
    const res = await consolePost(t, `/console/team/members/${dev.userId}/remove`, owner.cookie, {});
    expect(res.status).toBe(303);
    expect((await consoleGet(t, '/console/keys', dev.cookie)).status).toBe(303);
    expect(await roleOf(accountId, dev.userId)).toBeNull();
    expect((await t.services.keys.list(accountId)).find((k) => k.id === keyId)?.deletedAt).toBeNull();
    expect((await audited(accountId, 'member.removed'))[0]).toMatchObject({ actor: `console:${owner.email}`, details: { userId: dev.userId, email: dev.email } });
  });

  it('a member leaves; their session moves to their other account', async () => {
    const { accountId } = await t.createAccountWithKey();
    await addMember(t, accountId, 'owner');
    const viewer = await addMember(t, accountId, 'viewer');
    const res = await consolePost(t, '/console/team/leave', viewer.cookie, {});
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    expect(await roleOf(accountId, viewer.userId)).toBeNull();
    // Still signed in, now in their own (scratch) account, where they are the owner.
    const team = await consoleGet(t, '/console/team', viewer.cookie);
    expect(team.status).toBe(200);
    expect(await team.text()).toContain('Require two-factor authentication');
    expect((await audited(accountId, 'member.left'))[0]).toMatchObject({ details: { userId: viewer.userId } });
  });
});

describe('the account switcher', () => {
  it('a user in two accounts sees Switch account and a link per other account; switching needs a same-site POST', async () => {
    const { accountId } = await t.createAccountWithKey({ name: 'Acme' });
    await addMember(t, accountId, 'owner');
    const dev = await addMember(t, accountId, 'developer');
    const page = await (await consoleGet(t, '/console', dev.cookie)).text();
    expect(page).toContain('Switch account');
    const other = (await t.services.console.users.list(accountId)).length ? /\/console\/accounts\/([0-9a-f]{24})\/switch/.exec(page)?.[1] : undefined;
    expect(other).toBeDefined();
    const crossSite = await consolePost(t, `/console/accounts/${other}/switch`, dev.cookie, {}, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect((await consoleGet(t, '/console/playground', dev.cookie)).status).toBe(200);
    const switched = await consolePost(t, `/console/accounts/${other}/switch`, dev.cookie, {});
    expect(switched.status).toBe(303);
    // Owner of the scratch account now: the owners' card shows.
    expect(await (await consoleGet(t, '/console/team', dev.cookie)).text()).toContain('Require two-factor authentication');
    // Not a member: no switch.
    const stranger = await t.createAccountWithKey();
    expect((await consolePost(t, `/console/accounts/${stranger.accountId}/switch`, dev.cookie, {})).status).toBe(404);
  });
});

describe('requiring two-factor authentication', () => {
  it('sends a member without it to Settings before any other page; a state change elsewhere is refused', async () => {
    const { accountId } = await t.createAccountWithKey();
    const owner = await addMember(t, accountId, 'owner');
    const dev = await addMember(t, accountId, 'developer');
    // An owner without it cannot require it (they would be locked out of this page).
    const refused = await consolePost(t, '/console/team/require-2fa', owner.cookie, { require2fa: 'on' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('Set up two-factor authentication for yourself');
    await enableTwoFactor(t, owner.userId);
    expect((await consolePost(t, '/console/team/require-2fa', owner.cookie, { require2fa: 'on' })).status).toBe(303);
    expect((await consoleGet(t, '/console/team', owner.cookie)).status).toBe(200);
    for (const path of ['/console', '/console/keys', '/console/team']) {
      const res = await consoleGet(t, path, dev.cookie);
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location')).toBe('/console/settings');
    }
    const post = await consolePost(t, '/console/keys', dev.cookie, { name: 'x' }, json);
    expect(post.status).toBe(403);
    expect(await post.json()).toMatchObject({ code: 'two_factor_required' });
    expect((await consolePost(t, '/console/team/require-2fa', owner.cookie, {})).status).toBe(303);
    expect((await consoleGet(t, '/console/keys', dev.cookie)).status).toBe(200);
  });
});
