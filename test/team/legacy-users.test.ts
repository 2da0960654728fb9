/**
 * A database written before teams: console users with one `accountId` and no memberships, inserted as
 * raw documents in exactly that shape. Each signs in, is the owner of its account, and the first change
 * to the team writes the membership out; a restart writes out every remaining one (idempotently).
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { argon2Hasher } from '../../src/providers/passwords/argon2.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, signIn } from '../helpers/console.js';
import { addMember } from '../helpers/team.js';

let t: TestApp;
const PASSWORD = 'an old but long password';

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A user document as the previous release wrote it. */
async function legacyUser(accountId: string, email: string) {
  const _id = new ObjectId();
  await t.connection.db!.collection('console_users').insertOne({ _id, accountId: new ObjectId(accountId), email, passwordHash: await argon2Hasher.hash(PASSWORD), createdAt: new Date('2026-01-05T10:00:00Z') });
  return _id;
}

describe('a console user of the previous release', () => {
  it('signs in and is the owner of its account', async () => {
    const { accountId } = await t.createAccountWithKey({ name: 'Old Co' });
    const id = await legacyUser(accountId, 'old@example.com');
    const session = await signIn(t, 'old@example.com', PASSWORD);
    expect(session.status).toBe(303);
    const team = await consoleGet(t, '/console/team', session.cookie);
    expect(team.status).toBe(200);
    const page = await team.text();
    expect(page).toContain('old@example.com');
    expect(page).toContain('Require two-factor authentication');
    expect(page).toContain('Invite member');
    // Still the shape it was: reading wrote nothing.
    expect((await t.connection.db!.collection('console_users').findOne({ _id: id }))?.memberships).toBeUndefined();
  });

  it('keeps the last-owner rule, and its membership is written out by the first change to the team', async () => {
    const { accountId } = await t.createAccountWithKey();
    const id = await legacyUser(accountId, 'old2@example.com');
    const owner = await signIn(t, 'old2@example.com', PASSWORD);
    const demote = await consolePost(t, `/console/team/members/${id.toHexString()}/role`, owner.cookie, { role: 'admin' });
    expect(demote.status).toBe(409);
    const dev = await addMember(t, accountId, 'developer');
    expect((await consolePost(t, `/console/team/members/${dev.userId}/role`, owner.cookie, { role: 'owner' })).status).toBe(303);
    expect((await consolePost(t, `/console/team/members/${id.toHexString()}/role`, owner.cookie, { role: 'admin' })).status).toBe(303);
    const doc = await t.connection.db!.collection('console_users').findOne({ _id: id });
    expect(doc?.memberships).toEqual([{ accountId: new ObjectId(accountId), role: 'admin', joinedAt: new Date('2026-01-05T10:00:00Z') }]);
  });

  it('a restart writes out every remaining membership, and a second one changes nothing', async () => {
    const { accountId } = await t.createAccountWithKey();
    const id = await legacyUser(accountId, 'old3@example.com');
    const second = await startTestApp();
    try {
      const written = await second.connection.db!.collection('console_users').findOne({ _id: id });
      expect(written?.memberships).toEqual([{ accountId: new ObjectId(accountId), role: 'owner', joinedAt: new Date('2026-01-05T10:00:00Z') }]);
      const third = await startTestApp();
      await third.close();
      expect(await second.connection.db!.collection('console_users').findOne({ _id: id })).toEqual(written);
      expect((await signIn(second, 'old3@example.com', PASSWORD)).status).toBe(303);
    } finally {
      await second.close();
    }
  });
});
