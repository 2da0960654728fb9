/**
 * A gateway killed (SIGKILL) in the middle of a burst of group-committed charges of one account, made
 * through a plain key and a capped key over two gateways: every request it left unanswered is sent
 * again, with the same Idempotency-Key, to the other gateway until it gets a final answer. The
 * account's balance is then the initial balance minus the answered charges, to the credit; the capped
 * key has spent exactly its answered charges; and the key sweep settles what the dead gateway left
 * without changing either.
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startGatewayProcess, type GatewayProcess } from '../gateway/gateway-process.js';

const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
const INITIAL = 150;
const LIMIT = 60;
const REQUESTS = 300;
const AT_ONCE = 32;
/** A is killed once it has answered this many requests and holds one still running. */
const KILL_AFTER = 40;
const WORDS = ['cat', 'dog', 'tree', 'house', 'river', 'light', 'stone', 'music', 'water', 'bird', 'cloud', 'bread'];
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let a: GatewayProcess | undefined;
let b: TestApp | undefined;
afterAll(async () => {
  await a?.dispose();
  await b?.close();
});

interface Answer {
  status: number;
  code: string | null;
  /** Which gateway gave the final answer. */
  via: 'A' | 'B';
}

async function send(base: string, key: string, idempotencyKey: string, keyword: string): Promise<{ status: number; code: string | null }> {
  const res = await fetch(`${base}/api/playground/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ keyword }),
  });
  const body = (await res.json().catch(() => null)) as { code?: string } | null;
  return { status: res.status, code: body?.code ?? null };
}

describe('a gateway killed during a burst of batched charges', () => {
  it('the balance is the initial balance minus the answered charges, and the capped key spent exactly its answered ones', { timeout: 240_000 }, async () => {
    const dbName = `t_kill_burst_${randomUUID().slice(0, 8)}`;
    // B first: it starts on the fresh database (and would drop it, empty as it is, if it came second).
    b = await startTestApp({ dbName, IDEMPOTENCY_LOCK_MS: '2000' });
    const gwB = b;
    const account = await gwB.services.credits.createAccount('kill burst', INITIAL, actor);
    const plain = await gwB.services.keys.create(account.id, 'plain', actor);
    const capped = await gwB.services.keys.create(account.id, 'capped', actor, { creditLimit: LIMIT });
    a = await startGatewayProcess({ MONGODB_URI: `${inject('mongoUri').replace(/\/?$/, '/')}${dbName}`, IN_PROCESS_WORKER: 'false', LOG_LEVEL: 'warn', IDEMPOTENCY_LOCK_MS: '2000' }, { demoKey: false });
    const gwA = a;

    const answers: (Answer | undefined)[] = new Array(REQUESTS);
    const retries: Promise<void>[] = [];
    let answeredByA = 0;
    let unansweredByA = 0;
    let killedAt = -1;
    let next = 0;
    let inProgress = 0;
    /** A's requests it left claimed and unanswered when it died. */
    let leftRunning = -1;
    /** The idempotency records of the requests sent to A (their ids, as the gateway names them). */
    const recordsOfA: string[] = [];
    const idempotency = gwB.connection.collection<{ _id: string; state: string }>('idempotency_keys');
    // The kill: once A has answered KILL_AFTER requests, as soon as the database shows one of A's
    // requests running (claimed, not yet answered), so that A dies in the middle of its work.
    const killer = (async () => {
      await until(() => answeredByA >= KILL_AFTER, 'A answers its first requests', { timeoutMs: 120_000 });
      await until(async () => (await idempotency.findOne({ _id: { $in: recordsOfA }, state: 'running' })) !== null, 'a request of A running', { timeoutMs: 120_000, intervalMs: 1 });
      killedAt = next;
      gwA.child.kill('SIGKILL');
      await gwA.closed;
      leftRunning = await idempotency.countDocuments({ _id: { $in: recordsOfA }, state: 'running' });
    })();

    /** Sent to B (again) until a final answer: a 409 means the key's earlier attempt still holds it. */
    const finalFromB = async (key: string, idem: string, keyword: string): Promise<Answer> => {
      const r = await until(
        async () => {
          const got = await send(gwB.baseUrl, key, idem, keyword);
          if (got.status !== 409 || got.code !== 'idempotency_key_in_progress') return got;
          inProgress++;
          return null;
        },
        `a final answer from B to ${idem}`,
        { timeoutMs: 180_000, intervalMs: 100 },
      );
      return { ...r, via: 'B' };
    };

    const run = async (i: number): Promise<void> => {
      const isCapped = i % 2 === 1;
      const key = isCapped ? capped.key : plain.key;
      const idem = `burst-${i}-${randomUUID()}`;
      // A word of its own per request: each lookup goes past the memory cache to the provider and the database.
      const keyword = `${WORDS[i % WORDS.length]!}${i}`;
      // Both keys on both gateways: request i goes to A when i % 4 < 2.
      if (i % 4 < 2) {
        recordsOfA.push(sha256(`${account.id}\n${isCapped ? capped.id : plain.id}\n${idem}`));
        let got: { status: number; code: string | null } | null = null;
        try {
          got = await send(gwA.base, key, idem, keyword);
        } catch {
          got = null;
        }
        if (got && got.status !== 409) {
          answers[i] = { ...got, via: 'A' };
          answeredByA++;
          return;
        }
        // No answer (the connection died with A, or A was already gone): B gets the same request.
        unansweredByA++;
        retries.push(finalFromB(key, idem, keyword).then((r) => void (answers[i] = r)));
        return;
      }
      answers[i] = await finalFromB(key, idem, keyword);
    };

    await Promise.all(
      Array.from({ length: AT_ONCE }, async () => {
        while (next < REQUESTS) await run(next++);
      }),
    );
    await killer;
    await Promise.all(retries);
    await gwA.closed;
    const diagnostics = `killed at request ${killedAt}; A answered ${answeredByA}, left ${unansweredByA} unanswered (${leftRunning} of them claimed and running); retries told in progress ${inProgress} times; ${gwA.stderr()}`;

    expect(killedAt, diagnostics).toBeGreaterThanOrEqual(0);
    expect(gwA.child.signalCode).toBe('SIGKILL');
    // The kill left requests unanswered (those in flight and those sent to A after it), retried on B.
    expect(unansweredByA, diagnostics).toBeGreaterThan(0);
    const all = answers.map((r, i) => ({ i, capped: i % 2 === 1, ...r! }));
    expect(all.every((r) => r.status !== undefined)).toBe(true);

    // No server error; every refusal is for the balance or for the key's limit.
    expect(all.filter((r) => r.status >= 500), diagnostics).toEqual([]);
    expect(all.filter((r) => r.status !== 200 && r.status !== 402), diagnostics).toEqual([]);
    for (const r of all.filter((r) => r.status === 402)) expect(['insufficient_credits', 'key_credit_limit']).toContain(r.code);
    // Only the capped key is ever refused for its limit.
    expect(all.filter((r) => r.code === 'key_credit_limit' && !r.capped)).toEqual([]);

    const ok = all.filter((r) => r.status === 200);
    const cappedOk = ok.filter((r) => r.capped).length;
    const summary = `${diagnostics}; answered 200: ${ok.length} (capped ${cappedOk}), via B ${ok.filter((r) => r.via === 'B').length}`;

    // The balance: the initial balance minus the answered charges, to the credit.
    await gwB.services.credits.confirmed();
    const balance = (await gwB.services.credits.getAccount(account.id))!.credits;
    expect.soft({ balance, charged: INITIAL - balance, answered: ok.length }, summary).toEqual({ balance: INITIAL - ok.length, charged: ok.length, answered: ok.length });
    // Demand (150 plain requests alone) covers the balance whatever the order: it ends at zero.
    expect.soft(balance, summary).toBe(0);
    expect.soft(cappedOk, summary).toBeLessThanOrEqual(LIMIT);
    // A move of the key's credits that A left half done hides credits until the sweep, never adds any.
    const leftBefore = (await gwB.services.keys.get(capped.id)).creditsLeft!;
    expect.soft(leftBefore, summary).toBeLessThanOrEqual(LIMIT - cappedOk);

    // The sweep, past every lease: it settles what A left and changes nothing that was answered.
    await gwB.services.imageJobs.keys!.sweep(new Date(Date.now() + 120_000));
    expect((await gwB.services.credits.getAccount(account.id))!.credits, summary).toBe(balance);
    expect.soft((await gwB.services.keys.get(capped.id)).creditsLeft, summary).toBe(LIMIT - cappedOk);
    // Settled once: a second sweep finds nothing.
    expect(await gwB.services.imageJobs.keys!.sweep(new Date(Date.now() + 120_000)), summary).toMatchObject({ released: 0, confirmed: 0 });
    expect((await gwB.services.credits.getAccount(account.id))!.credits).toBe(balance);
  });
});
