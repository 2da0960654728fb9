import { createHmac, timingSafeEqual } from 'node:crypto';
import { SIGNATURE_PARAM } from '../links/secret-params.js';

/**
 * Signed, expiring image URLs: HMAC-SHA256 over job id, image index and expiry, so a URL can be fetched
 * without an Authorization header and cannot be altered to reach another image or live longer.
 */
export type SignatureCheck = 'valid' | 'expired' | 'invalid';

export const IMAGE_FILE_PATH_PREFIX = '/api/playground/images';

/**
 * A non-negative integer in the one form this module writes it: decimal digits, no sign, no leading
 * zero (other than `0` itself), at most `maxDigits`. Anything else is undefined, so `00`, `+1` or
 * `0<expires>` can never stand for a URL that was issued with `0`, `1` or `<expires>`.
 */
export function parseCanonicalUint(text: unknown, maxDigits: number): number | undefined {
  if (typeof text !== 'string' || text.length > maxDigits || !/^(?:0|[1-9][0-9]*)$/.test(text)) return undefined;
  return Number(text);
}

/** Digits an expiry may have (epoch seconds; 12 digits reach year 33658). */
const EXPIRES_MAX_DIGITS = 12;

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
    return `${IMAGE_FILE_PATH_PREFIX}/${jobId}/images/${index}?expires=${expires}&${SIGNATURE_PARAM}=${this.signature(jobId, index, expires)}`;
  }

  url(baseUrl: string, jobId: string, index: number, now = new Date()): string {
    return `${baseUrl.replace(/\/+$/, '')}${this.path(jobId, index, now)}`;
  }

  /** `expires` and `sig` as they came in the query; only the canonical forms of what `path` wrote verify. */
  verify(jobId: string, index: number, expires: unknown, sig: unknown, now = new Date()): SignatureCheck {
    const expiry = parseCanonicalUint(expires, EXPIRES_MAX_DIGITS);
    if (expiry === undefined || !Number.isSafeInteger(index) || index < 0 || typeof sig !== 'string') return 'invalid';
    const expected = Buffer.from(this.signature(jobId, index, expiry));
    const given = Buffer.from(sig);
    // Constant-time comparison; lengths are public (fixed by the HMAC), so comparing them first leaks nothing.
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return expiry * 1000 > now.getTime() ? 'valid' : 'expired';
  }
}
