import { describe, expect, it } from 'vitest';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';

const jobId = '8a4c3a5e-1f0b-4c7e-9a55-2b9f3f0f1d11';

describe('signed image URLs', () => {
  const signer = new ImageUrlSigner('s'.repeat(40), 3600);
  const now = new Date('2026-01-01T10:20:00Z');

  function parts(url: string) {
    const u = new URL(url);
    return { path: u.pathname, expires: u.searchParams.get('expires')!, sig: u.searchParams.get('sig')! };
  }

  it('issues a URL valid for at least the TTL that verifies', () => {
    const { path, expires, sig } = parts(signer.url('http://x.test/', jobId, 3, now));
    expect(path).toBe(`/api/playground/images/${jobId}/images/3`);
    expect(Number(expires) * 1000 - now.getTime()).toBeGreaterThanOrEqual(3600_000);
    expect(Number(expires) * 1000 - now.getTime()).toBeLessThanOrEqual(2 * 3600_000);
    expect(signer.verify(jobId, 3, expires, sig, now)).toBe('valid');
    // Still valid 59 minutes later, expired after the expiry.
    expect(signer.verify(jobId, 3, expires, sig, new Date(now.getTime() + 59 * 60_000))).toBe('valid');
    expect(signer.verify(jobId, 3, expires, sig, new Date(Number(expires) * 1000 + 1))).toBe('expired');
  });

  it('is stable within the hour, so clients can cache', () => {
    expect(signer.url('http://x', jobId, 0, now)).toBe(signer.url('http://x', jobId, 0, new Date(now.getTime() + 60_000)));
  });

  it('refuses tampering with index, job, expiry, signature or secret', () => {
    const { expires, sig } = parts(signer.url('http://x', jobId, 3, now));
    expect(signer.verify(jobId, 4, expires, sig, now)).toBe('invalid');
    expect(signer.verify(jobId.replace('8', '9'), 3, expires, sig, now)).toBe('invalid');
    expect(signer.verify(jobId, 3, String(Number(expires) + 3600), sig, now)).toBe('invalid');
    expect(signer.verify(jobId, 3, expires, sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A'), now)).toBe('invalid');
    expect(signer.verify(jobId, 3, expires, sig.slice(0, 10), now)).toBe('invalid');
    expect(signer.verify(jobId, 3, undefined, sig, now)).toBe('invalid');
    expect(signer.verify(jobId, 3, '12abc', sig, now)).toBe('invalid');
    expect(new ImageUrlSigner('t'.repeat(40), 3600).verify(jobId, 3, expires, sig, now)).toBe('invalid');
  });

  it('honours a longer TTL', () => {
    const long = new ImageUrlSigner('s'.repeat(40), 24 * 3600);
    const { expires } = parts(long.url('http://x', jobId, 0, now));
    expect(Number(expires) * 1000 - now.getTime()).toBeGreaterThanOrEqual(24 * 3600_000);
  });
});
