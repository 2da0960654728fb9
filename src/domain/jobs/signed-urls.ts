import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed, expiring image URLs: HMAC-SHA256 over job id, image index and expiry, so a URL can be fetched
 * without an Authorization header and cannot be altered to reach another image or live longer.
 */
export type SignatureCheck = 'valid' | 'expired' | 'invalid';

export const IMAGE_FILE_PATH_PREFIX = '/api/playground/images';

export class ImageUrlSigner {
  constructor(
    private readonly secret: string,
    /** Minimum lifetime of a URL; at least an hour (config enforces it). */
    private readonly ttlSeconds: number,
  ) {}

  /**
   * Expiry for a URL issued at `now`: at least `ttlSeconds` ahead, rounded up to the next full hour so
   * repeated polls hand out the same URL for up to an hour and clients can cache the bytes.
   */
  expiryFor(now: Date): number {
    const earliest = Math.floor(now.getTime() / 1000) + this.ttlSeconds;
    return Math.ceil(earliest / 3600) * 3600;
  }

  signature(jobId: string, index: number, expires: number): string {
    return createHmac('sha256', this.secret).update(`${jobId}\n${index}\n${expires}`).digest('base64url');
  }

  /** Path and query of the image's URL, to be appended to the public base address. */
  path(jobId: string, index: number, now = new Date()): string {
    const expires = this.expiryFor(now);
    return `${IMAGE_FILE_PATH_PREFIX}/${jobId}/images/${index}?expires=${expires}&sig=${this.signature(jobId, index, expires)}`;
  }

  url(baseUrl: string, jobId: string, index: number, now = new Date()): string {
    return `${baseUrl.replace(/\/+$/, '')}${this.path(jobId, index, now)}`;
  }

  verify(jobId: string, index: number, expires: unknown, sig: unknown, now = new Date()): SignatureCheck {
    if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires) || typeof sig !== 'string') return 'invalid';
    const expected = Buffer.from(this.signature(jobId, index, Number(expires)));
    const given = Buffer.from(sig);
    // Constant-time comparison; lengths are public (fixed by the HMAC), so comparing them first leaks nothing.
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return Number(expires) * 1000 > now.getTime() ? 'valid' : 'expired';
  }
}
