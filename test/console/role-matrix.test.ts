/**
 * The role matrix, generated from the routes buildApp registers (as test/security/doors.test.ts does
 * for credentials): every state-changing console route declares the action it needs, and for every
 * such route and every role the answer is the contract's table (src/domain/team/permissions.ts): a
 * role without the action gets 403 `role_forbidden` and the database is exactly as before; a role with
 * it gets past the check. A new route cannot skip this suite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIONS, can, PERMISSIONS, ROLES, type Action, type Role } from '../../src/domain/team/permissions.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, sameOrigin } from '../helpers/console.js';
import { addMember, type TestMember } from '../helpers/team.js';

interface Route {
  method: string;
  url: string;
  auth: string | undefined;
  permission: string | undefined;
}

const routes: Route[] = [];
let t: TestApp;
let accountId: string;
const members = {} as Record<Role, TestMember>;

beforeAll(async () => {
  t = await startTestApp({
    onRoute: (r) => {
      for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url, auth: r.auth, permission: r.permission });
    },
  });
  accountId = (await t.createAccountWithKey({ credits: 50 })).accountId;
  for (const role of ROLES) members[role] = await addMember(t, accountId, role);
  // A second owner, so that an owner's allowed Leave is not refused as the last one's.
  await addMember(t, accountId, 'owner');
});
afterAll(async () => {
  await t?.close();
});

const sessionRoutes = () => routes.filter((r) => r.auth === 'session');
const changing = (r: Route) => r.method !== 'GET';
/** Leaving last: an allowed Leave signs that member out of the account. */
const order = (a: Route, b: Route) => Number(a.url === '/console/team/leave') - Number(b.url === '/console/team/leave');
const fill = (url: string) => url.replace(/:\w+/g, '0123456789abcdef01234567');

/** Everything stored, but what reading a page may touch (a session's last-seen time). */
async function snapshot(): Promise<string> {
  const db = t.connection.db!;
  const out: Record<string, unknown[]> = {};
  for (const { name } of await db.listCollections().toArray()) {
    const docs = await db.collection(name).find({}).sort({ _id: 1 }).toArray();
    out[name] = docs.map((d) => (name === 'console_sessions' ? { ...d, lastSeenAt: null, expiresAt: null } : d));
  }
  return JSON.stringify(out);
}

function call(route: Route, member: TestMember) {
  return fetch(`${t.baseUrl}${fill(route.url)}`, {
    method: route.method,
    redirect: 'manual',
    headers: { cookie: member.cookie, accept: 'application/json', ...(changing(route) ? { ...sameOrigin(t), 'content-type': 'application/json' } : {}) },
    body: changing(route) ? '{}' : undefined,
  });
}

describe('every console route declares what it needs', () => {
  it('found the routes', () => {
    expect(sessionRoutes().filter(changing).length).toBeGreaterThan(12);
    expect(sessionRoutes().map((r) => `${r.method} ${r.url}`)).toEqual(expect.arrayContaining(['POST /console/team/members/:id/role', 'POST /console/keys', 'POST /console/jobs/:id/cancel']));
  });

  it('every console route names an action of the table; a state-changing one never just `view`', () => {
    for (const r of sessionRoutes()) {
      expect(ACTIONS, `${r.method} ${r.url}`).toContain(r.permission);
      if (changing(r)) expect(r.permission, `${r.method} ${r.url} changes state`).not.toBe('view');
    }
  });

  it('the table is the contract’s', () => {
    const table: Record<Action, Role[]> = {
      view: ['owner', 'admin', 'developer', 'viewer'],
      self: ['owner', 'admin', 'developer', 'viewer'],
      'keys.manage': ['owner', 'admin', 'developer'],
      'webhooks.manage': ['owner', 'admin', 'developer'],
      'jobs.cancel': ['owner', 'admin', 'developer'],
      'playground.use': ['owner', 'admin', 'developer'],
      'explorer.mutate': ['owner', 'admin', 'developer'],
      'members.manage': ['owner', 'admin'],
      'billing.manage': ['owner', 'admin'],
      'owners.manage': ['owner'],
      'account.require2fa': ['owner'],
    };
    expect(PERMISSIONS).toEqual(table);
  });
});

describe('pages hide what a role cannot use', () => {
  it('a refused form post shows the refusal on a page', async () => {
    const res = await fetch(`${t.baseUrl}/console/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: members.viewer.cookie, ...sameOrigin(t), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=sneaky',
    });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('You do not have permission to do that');
  });

  const has = async (member: TestMember, path: string, text: string) => (await (await consoleGet(t, path, member.cookie)).text()).includes(text);

  it('a viewer sees no Add Key, no webhook form, no Invite member, no Playground link', async () => {
    const v = members.viewer;
    expect(await has(v, '/console/keys', '>Add Key</button>')).toBe(false);
    expect(await has(v, '/console/webhooks', 'Add endpoint')).toBe(false);
    expect(await has(v, '/console/team', 'Invite member')).toBe(false);
    expect(await has(v, '/console/team', 'href="/console/playground"')).toBe(false);
    expect(await has(members.developer, '/console/keys', '>Add Key</button>')).toBe(true);
    expect(await has(members.developer, '/console/team', 'href="/console/playground"')).toBe(true);
  });

  it('only managers see Invite member; only owners the two-factor requirement', async () => {
    expect(await has(members.developer, '/console/team', 'Invite member')).toBe(false);
    expect(await has(members.admin, '/console/team', 'Invite member')).toBe(true);
    expect(await has(members.admin, '/console/team', 'Require two-factor authentication')).toBe(false);
    expect(await has(members.owner, '/console/team', 'Require two-factor authentication')).toBe(true);
  });

  it("a viewer's Explorer token has the read scope only; a developer's has every scope", async () => {
    const scopesOf = async (member: TestMember) => {
      const page = await (await consoleGet(t, '/console/explorer', member.cookie)).text();
      const token = /wi_tok_[A-Za-z0-9_-]+/.exec(page)?.[0];
      expect(token).toBeDefined();
      const res = await fetch(`${t.baseUrl}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, origin: t.baseUrl, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation { lookup(keyword: "tree") { __typename } }' }),
      });
      return (await res.json()) as { errors?: { extensions: { code: string } }[] };
    };
    expect((await scopesOf(members.viewer)).errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    expect((await scopesOf(members.developer)).errors?.[0]?.extensions.code).not.toBe('FORBIDDEN');
  });
});

// Last: an allowed Leave takes that member out of the account.
describe('the role matrix', () => {
  for (const role of ROLES) {
    it(`${role}: refused exactly where the table says, and a refusal changes nothing`, async () => {
      const checked = sessionRoutes()
        .filter((r) => changing(r) || r.permission !== 'view')
        .sort(order);
      for (const route of checked) {
        const action = route.permission as Action;
        const what = `${role} ${route.method} ${route.url} (${action})`;
        if (can(role, action)) {
          const res = await call(route, members[role]);
          const body = res.headers.get('content-type')?.includes('json') ? ((await res.json()) as { code?: string }) : {};
          expect(body.code, what).not.toBe('role_forbidden');
          expect(res.status, what).not.toBe(401);
        } else {
          const before = await snapshot();
          const res = await call(route, members[role]);
          expect(res.status, what).toBe(403);
          expect(await res.json(), what).toMatchObject({ code: 'role_forbidden', error: 'You do not have permission to do that' });
          expect(await snapshot(), `${what}: nothing changed`).toBe(before);
        }
      }
    });
  }
});
