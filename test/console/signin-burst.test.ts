/**
 * The sign-in throttle under concurrent bursts over HTTP: at most the allowed number of attempts per
 * email (5) and per IP address (30) are judged, however many arrive at once; the rest get 429 with
 * Retry-After and cost no password hash.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PasswordHasher } from '../../src/domain/console/passwords.js';
import { argon2Hasher } from '../../src/providers/passwords/argon2.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createConsoleUser, signIn } from '../helpers/console.js';
import { until } from '../helpers/until.js';

/** argon2id, counting the password checks (each one is a hash). */
let verifications = 0;
const countingHasher: PasswordHasher = {
  hash: (password) => argon2Hasher.hash(password),
  verify: (stored, password) => {
    verifications++;
    return argon2Hasher.verify(stored, password);
  },
};

let t: TestApp;
beforeAll(async () => {
  // One trusted hop (the test client plays the load balancer), so each test picks its client address.
  t = await startTestApp({ TRUST_PROXY: '1', deps: { passwordHasher: countingHasher } });
});
afterAll(async () => {
  await t?.close();
});

let nextAddress = 1;
/** A client address of its own per test, so the per-IP limit of one test does not reach another. */
const freshIp = () => `203.0.113.${nextAddress++}`;

type Outcome = Awaited<ReturnType<typeof signIn>>;
function tally(results: Outcome[]) {
  const judged = results.filter((r) => r.status === 401 || r.status === 303).length;
  const refused = results.filter((r) => r.status === 429);
  return { judged, refused: refused.length, refusals: refused };
}

describe('sign-in bursts', () => {
  it('15 wrong passwords at once: at most 5 are judged, the rest get 429 with Retry-After and no hash; then the right password is refused', async () => {
    const u = await createConsoleUser(t);
    const ip = freshIp();
    const before = verifications;
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => signIn(t, u.email, `wrong password ${i}`, { 'x-forwarded-for': ip })));
    const { judged, refused, refusals } = tally(results);
    expect(judged).toBeLessThanOrEqual(5);
    expect(judged + refused).toBe(15);
    expect(verifications - before).toBe(judged);
    for (const r of refusals) {
      expect(Number(r.res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(r.text).toContain('Too many attempts');
    }
    // The email is locked now: the right password does not sign in.
    const right = await signIn(t, u.email, u.password, { 'x-forwarded-for': ip });
    expect(right.status).toBe(429);
    expect(right.cookie).toBeNull();
  });

  it('the right password sent during a burst of 15 wrong ones, once 5 are being judged: refused, and at most 5 judged in all', async () => {
    const u = await createConsoleUser(t);
    const ip = freshIp();
    const subject = `email:${createHash('sha256').update(u.email).digest('hex').slice(0, 32)}`;
    const throttle = t.connection.db!.collection<{ _id: string; failures: number }>('signin_throttle');
    const wrong = Promise.all(Array.from({ length: 15 }, (_, i) => signIn(t, u.email, `wrong password ${i}`, { 'x-forwarded-for': ip })));
    await until(async () => ((await throttle.findOne({ _id: subject }))?.failures ?? 0) >= 5);
    const right = await signIn(t, u.email, u.password, { 'x-forwarded-for': ip });
    const { judged, refused } = tally([...(await wrong), right]);
    expect(right.status).toBe(429);
    expect(right.cookie).toBeNull();
    expect(judged).toBeLessThanOrEqual(5);
    expect(judged + refused).toBe(16);
  });

  it('30 wrong passwords for one email at once, and 40 for 40 emails from one address: 5 and 30 judged', async () => {
    const u = await createConsoleUser(t);
    const oneEmail = tally(await Promise.all(Array.from({ length: 30 }, (_, i) => signIn(t, u.email, `wrong password ${i}`, { 'x-forwarded-for': freshIp() }))));
    const ip = freshIp();
    const oneIp = tally(await Promise.all(Array.from({ length: 40 }, (_, i) => signIn(t, `spray-${i}@example.com`, 'a wrong password!', { 'x-forwarded-for': ip }))));
    process.stdout.write(
      `sign-in burst: 30 concurrent wrong sign-ins for one email: ${oneEmail.judged} judged, ${oneEmail.refused} × 429; ` +
        `40 concurrent wrong sign-ins from one IP (40 emails): ${oneIp.judged} judged, ${oneIp.refused} × 429\n`,
    );
    expect(oneEmail.judged).toBeLessThanOrEqual(5);
    expect(oneEmail.refused).toBe(30 - oneEmail.judged);
    expect(oneIp.judged).toBeLessThanOrEqual(30);
    expect(oneIp.refused).toBe(40 - oneIp.judged);
    // The address is locked for every email, the right password included.
    const other = await createConsoleUser(t);
    expect((await signIn(t, other.email, other.password, { 'x-forwarded-for': ip })).status).toBe(429);
    expect((await signIn(t, other.email, other.password, { 'x-forwarded-for': freshIp() })).status).toBe(303);
  });
});
