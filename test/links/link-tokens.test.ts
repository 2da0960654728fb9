/** Single-use link tokens on the database: only the hash stored, one use, purpose and expiry enforced. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoLinkTokenStore } from '../../src/data/link-tokens.js';
import { hashLinkToken, LinkTokens } from '../../src/domain/links/service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('link tokens', () => {
  let t: TestApp;
  let store: MongoLinkTokenStore;
  let links: LinkTokens;

  beforeAll(async () => {
    t = await startTestApp();
    store = new MongoLinkTokenStore(t.connection);
    await store.init();
    links = new LinkTokens({ store });
  });
  afterAll(() => t.close());

  it('a token is 256 random bits; only its SHA-256 is stored, with purpose, payload and expiry', async () => {
    const issued = await links.issue('reset_password', { userId: 'u1' }, 3_600_000);
    expect(issued.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const docs = await t.connection.db!.collection('link_tokens').find({}).toArray();
    expect(JSON.stringify(docs)).not.toContain(issued.token);
    const doc = docs.find((d) => d.hash === hashLinkToken(issued.token))!;
    expect(doc).toMatchObject({ purpose: 'reset_password', payload: { userId: 'u1' }, usedAt: null });
    expect(doc.expiresAt.getTime() - doc.createdAt.getTime()).toBe(3_600_000);
  });

  it('is used once: the second use, of any kind, is refused', async () => {
    const { token } = await links.issue('verify_email', { email: 'a@example.com' }, 60_000);
    expect(await links.peek('verify_email', token)).toMatchObject({ ok: true, record: { payload: { email: 'a@example.com' } } });
    expect(await links.consume('verify_email', token)).toMatchObject({ ok: true });
    expect(await links.consume('verify_email', token)).toEqual({ ok: false });
    expect(await links.peek('verify_email', token)).toEqual({ ok: false });
  });

  it('of concurrent uses of one token exactly one wins', async () => {
    const { token } = await links.issue('reset_password', { userId: 'u2' }, 60_000);
    const results = await Promise.all(Array.from({ length: 8 }, () => links.consume('reset_password', token)));
    expect(results.filter((r) => r.ok)).toHaveLength(1);
  });

  it('is refused for another purpose, after its expiry, and when malformed', async () => {
    const { token } = await links.issue('invitation', { accountId: 'acc' }, 60_000);
    expect(await links.consume('reset_password', token)).toEqual({ ok: false });
    const later = new LinkTokens({ store, now: () => new Date(Date.now() + 120_000) });
    expect(await later.consume('invitation', token)).toEqual({ ok: false });
    for (const bad of [undefined, 42, '', 'short', `${token}x`, { $ne: null }]) expect(await links.consume('invitation', bad)).toEqual({ ok: false });
    expect(await links.consume('invitation', token)).toMatchObject({ ok: true });
  });

  it('lists and revokes the usable tokens of a payload', async () => {
    const a = await links.issue('invitation', { accountId: 'acc-list', email: 'x@example.com' }, 60_000);
    await links.issue('invitation', { accountId: 'other', email: 'y@example.com' }, 60_000);
    const listed = await links.listUsable('invitation', { accountId: 'acc-list' });
    expect(listed.map((r) => r.id)).toEqual([a.id]);
    expect(await links.revoke('invitation', a.id, { accountId: 'other' })).toBeNull();
    expect(await links.revoke('invitation', a.id, { accountId: 'acc-list' })).toMatchObject({ id: a.id });
    expect(await links.consume('invitation', a.token)).toEqual({ ok: false });
    expect(await links.listUsable('invitation', { accountId: 'acc-list' })).toEqual([]);
  });

  it('expires by a TTL index on expiresAt', async () => {
    const indexes = await t.connection.db!.collection('link_tokens').indexes();
    expect(indexes.find((i) => i.key.expiresAt === 1)).toMatchObject({ expireAfterSeconds: 0 });
    expect(indexes.find((i) => i.key.hash === 1)).toMatchObject({ unique: true });
  });
});
