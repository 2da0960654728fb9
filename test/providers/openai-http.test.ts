import { describe, expect, it } from 'vitest';
import { backoffDelay, endpointUrl, withRetries, type RetryableFailure } from '../../src/providers/openai-http.js';

class Failure extends Error implements RetryableFailure {
  constructor(
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(retryable ? 'transient' : 'permanent');
  }
}

const policy = { retries: 3, backoffBaseMs: 1, backoffMaxMs: 5 };
const classify = (err: unknown) => (err instanceof Failure ? err : new Failure(false));

describe('OpenAI-compatible HTTP helpers', () => {
  it('joins base URL and path whatever the trailing slashes', () => {
    expect(endpointUrl('http://h/v1', 'chat/completions')).toBe('http://h/v1/chat/completions');
    expect(endpointUrl('http://h/v1///', 'images/generations')).toBe('http://h/v1/images/generations');
  });

  it('backs off exponentially with jitter, at least Retry-After, never above the cap', () => {
    const p = { retries: 5, backoffBaseMs: 100, backoffMaxMs: 1_000 };
    for (let i = 0; i < 50; i++) {
      expect(backoffDelay(0, p)).toBeGreaterThanOrEqual(50);
      expect(backoffDelay(0, p)).toBeLessThanOrEqual(100);
      expect(backoffDelay(2, p)).toBeGreaterThanOrEqual(200);
      expect(backoffDelay(2, p)).toBeLessThanOrEqual(400);
      expect(backoffDelay(9, p)).toBe(1_000);
      expect(backoffDelay(0, p, 700)).toBe(700);
      expect(backoffDelay(0, p, 60_000)).toBe(1_000);
    }
  });

  it('retries retryable failures up to the limit, then reports the last one', async () => {
    let calls = 0;
    const failing = () => {
      calls++;
      return Promise.reject(new Failure(true));
    };
    await expect(withRetries(failing, classify, policy, undefined, () => new Error('aborted'))).rejects.toThrow('transient');
    expect(calls).toBe(4);
  });

  it('stops at the first permanent failure and returns the first success', async () => {
    let calls = 0;
    await expect(
      withRetries(() => (calls++, Promise.reject(new Failure(false))), classify, policy, undefined, () => new Error('aborted')),
    ).rejects.toThrow('permanent');
    expect(calls).toBe(1);
    let tries = 0;
    const flaky = () => (++tries < 3 ? Promise.reject(new Failure(true)) : Promise.resolve('ok'));
    await expect(withRetries(flaky, classify, policy, undefined, () => new Error('aborted'))).resolves.toBe('ok');
    expect(tries).toBe(3);
  });

  it('an abort during the wait ends the loop with the caller’s error', async () => {
    const ctl = new AbortController();
    const slow = { retries: 3, backoffBaseMs: 10_000, backoffMaxMs: 10_000 };
    const run = withRetries(() => Promise.reject(new Failure(true)), classify, slow, ctl.signal, () => new Error('aborted by caller'));
    setTimeout(() => ctl.abort(), 10);
    await expect(run).rejects.toThrow('aborted by caller');
  });
});
