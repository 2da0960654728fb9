/**
 * Activity extends a console session even when the idle window is short (issue 19, item 8): with a
 * 1-minute window, sessions used to be refreshed at most once a minute, by which time they had expired.
 * The clock is injected (or the stored times moved back), so nothing here waits.
 */
import { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoSessionStore } from '../../src/data/console.js';
import { SessionService, touchInterval } from '../../src/domain/console/sessions.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, createConsoleUser, signIn } from '../helpers/console.js';

let t: TestApp;
let store: MongoSessionStore;
beforeAll(async () => {
  t = await startTestApp({ CONSOLE_SESSION_IDLE_MINUTES: '1' });
  store = new MongoSessionStore(t.connection);
  await store.init();
});
afterAll(async () => {
  await t?.close();
});

const meta = { ip: null, userAgent: 'test' };
/** The injected clock starts a day ahead, so the TTL index (real time) never removes these sessions. */
const start = () => new Date(Math.floor(Date.now() / 1000) * 1000 + 86_400_000);
const user = () => ({ id: new Types.ObjectId().toHexString(), accountId: new Types.ObjectId().toHexString(), email: 'refresh@example.com' });

describe('session refresh', () => {
  it('refreshes at most once a minute, or every quarter of a shorter idle window', () => {
    expect(touchInterval(30 * 60_000)).toBe(60_000);
    expect(touchInterval(4 * 60_000)).toBe(60_000);
    expect(touchInterval(60_000)).toBe(15_000);
  });

  it('with a 1-minute idle window, a request every 20 s keeps the session for 10 minutes; then 1 minute idle ends it', async () => {
    const t0 = start();
    let now = t0;
    const sessions = new SessionService({ sessions: store, limits: { idleMs: 60_000, absoluteMs: 3_600_000 }, now: () => now });
    const { token } = await sessions.start(user(), meta);
    for (let s = 20; s <= 600; s += 20) {
      now = new Date(t0.getTime() + s * 1000);
      expect(await sessions.resume(token, meta), `after ${s} s`).not.toBeNull();
    }
    now = new Date(now.getTime() + 60_000);
    expect(await sessions.resume(token, meta)).toBeNull();
  });

  it('a late refresh never moves an expiry back nor revives an expired session', async () => {
    const now = start();
    const sessions = new SessionService({ sessions: store, limits: { idleMs: 60_000, absoluteMs: 3_600_000 }, now: () => now });
    const { caller } = await sessions.start(user(), meta);
    const later = new Date(now.getTime() + 30_000);
    await store.touch(caller.sessionId, later, new Date(later.getTime() + 60_000));
    await store.touch(caller.sessionId, new Date(now.getTime() + 10_000), new Date(now.getTime() + 70_000));
    expect((await store.find(caller.sessionId))?.expiresAt).toEqual(new Date(later.getTime() + 60_000));
    const afterExpiry = new Date(later.getTime() + 61_000);
    await store.touch(caller.sessionId, afterExpiry, new Date(afterExpiry.getTime() + 60_000));
    expect((await store.find(caller.sessionId))?.expiresAt).toEqual(new Date(later.getTime() + 60_000));
  });

  it('over HTTP with CONSOLE_SESSION_IDLE_MINUTES=1: a page 20 s after the last activity extends the session', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const sessions = t.connection.db!.collection('console_sessions');
    // As if the last request had been 20 s ago: 40 s of the window left.
    const lastSeenAt = new Date(Date.now() - 20_000);
    await sessions.updateOne({ email: u.email }, { $set: { lastSeenAt, expiresAt: new Date(lastSeenAt.getTime() + 60_000) } });
    const before = Date.now();
    expect((await consoleGet(t, '/console/keys', cookie)).status).toBe(200);
    const stored = await sessions.findOne({ email: u.email });
    expect(stored?.lastSeenAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(stored?.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 60_000);
  });
});
