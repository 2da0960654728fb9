import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/domain/errors.js';
import { ImageFiles } from '../../src/domain/jobs/files.js';
import type { JobRecord } from '../../src/domain/jobs/records.js';
import { ImageUrlSigner, parseCanonicalUint } from '../../src/domain/jobs/signed-urls.js';
import { MemoryImageStore, MemoryJobStore } from './memory-fakes.js';

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

describe('canonical forms', () => {
  const signer = new ImageUrlSigner('s'.repeat(40), 3600);
  const now = new Date('2026-01-01T10:20:00Z');

  it('parses only plain decimal digits without a leading zero', () => {
    expect(parseCanonicalUint('0', 6)).toBe(0);
    expect(parseCanonicalUint('7', 6)).toBe(7);
    expect(parseCanonicalUint('123456', 6)).toBe(123456);
    for (const text of ['', '00', '01', '007', '+1', '-0', '-1', ' 1', '1 ', '1.0', '1e3', '0x1', '١', '1234567']) {
      expect(parseCanonicalUint(text, 6), JSON.stringify(text)).toBeUndefined();
    }
    expect(parseCanonicalUint(1, 6)).toBeUndefined();
    expect(parseCanonicalUint(['1'], 6)).toBeUndefined();
  });

  it('refuses an expiry written in any other form than the one signed', () => {
    const u = new URL(signer.url('http://x', jobId, 3, now));
    const expires = u.searchParams.get('expires')!;
    const sig = u.searchParams.get('sig')!;
    expect(signer.verify(jobId, 3, expires, sig, now)).toBe('valid');
    for (const variant of [`0${expires}`, `00${expires}`, `+${expires}`, ` ${expires}`, `${expires} `, `${expires}.0`, [expires]]) {
      expect(signer.verify(jobId, 3, variant, sig, now), JSON.stringify(variant)).toBe('invalid');
    }
  });

  it('serves an image only at its canonical index and expiry (404 for another index text, 403 for another expiry text)', async () => {
    const jobs = new MemoryJobStore();
    const images = new MemoryImageStore();
    const files = new ImageFiles({ jobs, images, signer, retentionMs: 30 * 24 * 3600_000 });
    const stored = await images.put({ jobId, index: 0, attempt: 1 }, { data: Buffer.from('png'), contentType: 'image/png' });
    const created = new Date();
    const job: JobRecord = {
      id: jobId,
      accountId: 'acc',
      keyId: 'key',
      status: 'completed',
      totalImages: 1,
      succeededImages: 1,
      failedImages: 0,
      canceledImages: 0,
      creditsUsed: 1,
      creditsRefunded: 0,
      cancelRequestedAt: null,
      charged: true,
      images: [
        { index: 0, prompt: 'p', status: 'succeeded', attempt: 1, fileId: stored.fileId, error: null, refund: 'none', startedAt: created, heartbeatAt: null, finishedAt: created },
      ],
      createdAt: created,
      updatedAt: created,
      completedAt: created,
    };
    await jobs.insert(job);
    const u = new URL(signer.url('http://x', jobId, 0));
    const expires = u.searchParams.get('expires')!;
    const sig = u.searchParams.get('sig')!;
    await expect(files.stat(jobId, '0', expires, sig)).resolves.toMatchObject({ fileId: stored.fileId });

    const code = (p: Promise<unknown>) => p.then(() => 'served', (err: unknown) => (err instanceof AppError ? err.code : String(err)));
    for (const index of ['00', '000', '+0', '-0', '0.0', ' 0', '0x0']) {
      expect(await code(files.stat(jobId, index, expires, sig)), index).toBe('image_not_found');
    }
    for (const variant of [`0${expires}`, `+${expires}`, `${expires}.0`]) {
      expect(await code(files.stat(jobId, '0', variant, sig)), variant).toBe('invalid_signature');
    }
  });
});
