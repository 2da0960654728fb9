import { invalid } from '../errors.js';
import { isKeyPermission, KEY_PERMISSIONS, type KeyPermission } from './permissions.js';
import { KEY_REFILLS, type KeyRefill, type KeySettings, type KeySettingsChange } from './records.js';

/** The console's `Expires` choices: how long from now (null: never). */
export const EXPIRY_CHOICES = [
  { value: 'never', label: 'Never', ms: null },
  { value: '7d', label: '7 days', ms: 7 * 86_400_000 },
  { value: '30d', label: '30 days', ms: 30 * 86_400_000 },
  { value: '90d', label: '90 days', ms: 90 * 86_400_000 },
  { value: '1y', label: '1 year', ms: 365 * 86_400_000 },
] as const;

/** A roll keeps the old key working this long at most (Stripe's 7 days). */
export const MAX_ROLL_GRACE_MS = 7 * 86_400_000;
/** The console's `Keep the old key working for` choices. */
export const GRACE_CHOICES = [
  { value: '0', label: 'Revoke now', ms: 0 },
  { value: '1h', label: '1 hour', ms: 3_600_000 },
  { value: '24h', label: '24 hours', ms: 86_400_000 },
  { value: '7d', label: '7 days', ms: MAX_ROLL_GRACE_MS },
] as const;

/** The largest credit limit and per-key rate limit accepted (far beyond any real use; keeps integers exact). */
export const MAX_KEY_LIMIT = 1_000_000_000;

/**
 * What a door hands over to set a key's settings (the console's form, the CLI's options), already
 * in these types: an absent field is left as it is (on create: the default); null clears it.
 */
export interface KeySettingsInput {
  /** An instant (Date or ISO 8601 string), or null: never. */
  expiresAt?: unknown;
  creditLimit?: unknown;
  refill?: unknown;
  rateLimitPerMinute?: unknown;
  permissions?: unknown;
}

/**
 * Validates settings against the rules every door shares (a 400 naming the field otherwise): an expiry
 * in the future, positive integer limits, a refill only with a credit limit, known permissions.
 * `current`: the key's settings before the change (an update), so that the refill rule sees both.
 */
export function parseKeySettings(input: KeySettingsInput, now: Date, current?: KeySettings): KeySettingsChange {
  const change: KeySettingsChange = {};
  if (input.expiresAt !== undefined) change.expiresAt = parseExpiry(input.expiresAt, now);
  if (input.creditLimit !== undefined) change.creditLimit = parseLimit('creditLimit', 'credit limit', input.creditLimit);
  if (input.rateLimitPerMinute !== undefined) change.rateLimitPerMinute = parseLimit('rateLimitPerMinute', 'rate limit per minute', input.rateLimitPerMinute);
  if (input.refill !== undefined) {
    if (input.refill !== null && !KEY_REFILLS.includes(input.refill as KeyRefill)) throw invalid('refill', 'refill must be daily, monthly or none');
    change.refill = input.refill as KeyRefill | null;
  }
  if (input.permissions !== undefined) change.permissions = parsePermissions(input.permissions);
  const limit = change.creditLimit !== undefined ? change.creditLimit : (current?.creditLimit ?? null);
  if (limit === null) {
    if (change.refill) throw invalid('refill', 'refill needs a credit limit');
    // Removing the limit removes its refill.
    if (current?.refill || change.creditLimit === null) change.refill = null;
  }
  return change;
}

function parseExpiry(value: unknown, now: Date): Date | null {
  if (value === null) return null;
  const at = value instanceof Date ? value : typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value.trim()) ? new Date(value.trim()) : null;
  if (!at || Number.isNaN(at.getTime())) throw invalid('expiresAt', 'expiresAt must be an ISO 8601 date-time (or never)');
  if (at.getTime() <= now.getTime()) throw invalid('expiresAt', 'expiresAt must be in the future');
  return at;
}

function parseLimit(field: string, label: string, value: unknown): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_KEY_LIMIT) {
    throw invalid(field, `${label} must be a whole number from 1 to ${MAX_KEY_LIMIT}`);
  }
  return value;
}

function parsePermissions(value: unknown): KeyPermission[] | null {
  if (value === null) return null;
  if (!Array.isArray(value) || !value.every(isKeyPermission)) throw invalid('permissions', `permissions must be a list of ${KEY_PERMISSIONS.join(', ')}`);
  // Kept in the catalog's order, once each; every permission is stored as a list too (not as "all").
  return KEY_PERMISSIONS.filter((p) => value.includes(p));
}

/** The expiry a console choice means from `now` (undefined: not a choice). */
export function expiryFromChoice(choice: unknown, now: Date): Date | null | undefined {
  const found = EXPIRY_CHOICES.find((c) => c.value === choice);
  if (!found) return undefined;
  return found.ms === null ? null : new Date(now.getTime() + found.ms);
}

/**
 * A grace period: `0`, or a number with a unit `s`, `m`, `h` or `d` (`30s`, `1h`, `24h`, `7d`), at most
 * 7 days. Returns milliseconds.
 */
export function parseGrace(value: unknown): number {
  const text = typeof value === 'number' ? `${value}s` : typeof value === 'string' ? value.trim() : '';
  const match = /^(\d{1,9})([smhd]?)$/.exec(text);
  const unit = { '': 1000, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match?.[2] ?? ''];
  const ms = match && unit ? Number(match[1]) * unit : NaN;
  if (!Number.isFinite(ms) || (match?.[2] === '' && match[1] !== '0') || ms > MAX_ROLL_GRACE_MS) {
    throw invalid('grace', 'grace must be 0 or a duration up to 7d, e.g. 30s, 1h, 24h, 7d');
  }
  return ms;
}

/** The refill period an instant falls in: the UTC day (`2026-11-27`) or month (`2026-11`). */
export function refillPeriod(refill: KeyRefill, at: Date): string {
  return refill === 'daily' ? at.toISOString().slice(0, 10) : at.toISOString().slice(0, 7);
}

/** The refill period a key of this refill is in at `at` (null: a key without refill has none). */
export function periodOfRefill(refill: KeyRefill | null, at: Date): string | null {
  return refill ? refillPeriod(refill, at) : null;
}

/**
 * What the key may spend now, as its next charge would see it: a key with a refill whose stored figure
 * belongs to an earlier period has its whole limit again (the reset happens with the next charge).
 */
export function creditsLeftNow(key: { creditLimit: number | null; creditsLeft: number | null; refill: KeyRefill | null; refilledFor: string | null }, now: Date): number | null {
  if (key.creditLimit === null) return null;
  if (key.refill && key.refilledFor !== refillPeriod(key.refill, now)) return key.creditLimit;
  return key.creditsLeft ?? key.creditLimit;
}
