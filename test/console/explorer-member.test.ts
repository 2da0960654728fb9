import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, createConsoleUser, signIn, type ConsoleUser } from '../helpers/console.js';
import { addMember, type TestMember } from '../helpers/team.js';
import { until } from '../helpers/until.js';

/**
 * An Explorer token belongs to the member it was minted for (CONTRACT "The GraphQL door"): on every
 * instance, it stops when the member is removed or signs out, and a member made viewer can no longer
 * run mutations with it. Two gateways on one database; the token is used on both before the change,
 * so each has it (and its member) cached, then on both after it.
 */
let a: TestApp;
let b: TestApp;
let owner: ConsoleUser;

beforeAll(async () => {
  a = await startTestApp();
  b = await startTestApp();
  owner = await createConsoleUser(a, { credits: 10_000 });
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const tokenOf = async (member: TestMember) => {
  const page = await (await consoleGet(a, '/console/explorer', member.cookie)).text();
  const token = /Bearer (wi_tok_[0-9a-f]{64})/.exec(page)?.[1];
  if (!token) throw new Error('no token on the Explorer page');
  return token;
};

/** An operation with the token, on one gateway, from the console's origin (the token's). */
async function run(gateway: TestApp, token: string, query: string) {
  const res = await fetch(`${gateway.baseUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, origin: a.baseUrl, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const body = (await res.json()) as { data?: unknown; errors?: { extensions: { code: string; reason?: string } }[] };
  return { status: res.status, code: body.errors?.[0]?.extensions.code, reason: body.errors?.[0]?.extensions.reason };
}

const ME = '{ me { credits } }';
const LOOKUP = 'mutation { lookup(keyword: "oak") { credits } }';
const DEADLINE = { timeoutMs: 30_000 };
const teamOwner = () => ({ accountId: owner.accountId, userId: null, role: 'owner' as const, audit: { actor: 'test', ip: null, host: 'test' } });

describe('Explorer tokens end with their member, on every instance', () => {
  it('a removed member’s token stops on both gateways', async () => {
    const member = await addMember(a, owner.accountId, 'developer');
    const token = await tokenOf(member);
    for (const g of [a, b]) expect((await run(g, token, ME)).status).toBe(200);
    await a.services.console.team.remove(teamOwner(), member.userId);
    const started = Date.now();
    for (const g of [a, b]) await until(async () => (await run(g, token, ME)).status === 401, 'the token refused', DEADLINE);
    console.log(`removed member's token refused on both gateways after ${Date.now() - started} ms`);
    expect(await run(b, token, ME)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED', reason: 'invalid_client_token' });
  });

  it('a developer made viewer can read but no longer run mutations with it', async () => {
    const member = await addMember(a, owner.accountId, 'developer');
    const token = await tokenOf(member);
    for (const g of [a, b]) expect((await run(g, token, LOOKUP)).status).toBe(200);
    await a.services.console.team.changeRole(teamOwner(), member.userId, 'viewer');
    for (const g of [a, b]) await until(async () => (await run(g, token, LOOKUP)).code === 'FORBIDDEN', 'the mutation refused', DEADLINE);
    const after = (await a.services.credits.balances([owner.accountId]))[0];
    for (const g of [a, b]) expect((await run(g, token, LOOKUP)).code).toBe('FORBIDDEN');
    expect((await a.services.credits.balances([owner.accountId]))[0]).toBe(after);
    for (const g of [a, b]) expect((await run(g, token, ME)).status).toBe(200);
  });

  it('a member who signs out ends the token; the same member signed in elsewhere keeps theirs', async () => {
    const member = await addMember(a, owner.accountId, 'developer');
    const token = await tokenOf(member);
    for (const g of [a, b]) expect((await run(g, token, ME)).status).toBe(200);
    const elsewhere = await signIn(a, member.email, member.password);
    await consolePost(a, `/console/accounts/${owner.accountId}/switch`, elsewhere.cookie!, {});
    const other = await tokenOf({ ...member, cookie: elsewhere.cookie! });
    const out = await consolePost(a, '/console/sign-out', member.cookie, {});
    expect(out.status).toBe(303);
    for (const g of [a, b]) await until(async () => (await run(g, token, ME)).status === 401, 'the token refused', DEADLINE);
    for (const g of [a, b]) expect((await run(g, other, ME)).status).toBe(200);
  });
});
