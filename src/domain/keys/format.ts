import { hash, randomBytes } from 'node:crypto';

/** Key format of the contract: `wi_live_` + 64 lowercase hex characters from 32 CSPRNG bytes. */
export const KEY_PREFIX = 'wi_live_';
export const KEY_PATTERN = /^wi_live_[0-9a-f]{64}$/;
/** Characters of the key shown in listings (the contract's "first 12 characters"). */
export const DISPLAY_PREFIX_LENGTH = 12;

/** A bearer secret: `prefix` + 64 lowercase hex characters from 32 CSPRNG bytes (keys, client tokens). */
export function randomSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('hex');
}

/** SHA-256 (hex) of a bearer secret: all that is stored of one. */
export function sha256Hex(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function generateKey(): string {
  return randomSecret(KEY_PREFIX);
}

export function isWellFormedKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

/** Only this is stored; the key itself cannot be recovered from it. */
export const hashKey = sha256Hex;

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}

const BEARER_KEY = /^Bearer wi_live_[0-9a-f]{64}$/;
const BEARER_KEY_LENGTH = 'Bearer '.length + KEY_PREFIX.length + 64;

export type BearerParse = { ok: true; key: string } | { ok: false; reason: 'missing_authorization' | 'invalid_api_key_format' };

/**
 * Reads an Authorization header value. Not `Bearer <token>` at all → missing_authorization; a token
 * that is not a well-formed key → invalid_api_key_format (the contract's two first 401s, in order).
 */
export function parseBearer(header: string | undefined): BearerParse {
  if (typeof header !== 'string') return { ok: false, reason: 'missing_authorization' };
  // The usual header, exactly `Bearer <key>`: one test, no capture (every API request reads it).
  if (header.length === BEARER_KEY_LENGTH && BEARER_KEY.test(header)) return { ok: true, key: header.slice(7) };
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  if (!match) return { ok: false, reason: 'missing_authorization' };
  const token = match[1]!;
  return isWellFormedKey(token) ? { ok: true, key: token } : { ok: false, reason: 'invalid_api_key_format' };
}
