import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import type { EmailThrottleStore } from './ports.js';

export interface EmailThrottlePolicy {
  perAddress: number;
  perIp: number;
  windowMs: number;
}

/** The contract's limits: 5 emails per address and 20 per IP address in any hour. */
export const DEFAULT_EMAIL_THROTTLE: EmailThrottlePolicy = { perAddress: 5, perIp: 20, windowMs: 3_600_000 };

export type EmailAdmission = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * Admits an email to an address, asked by a client at an IP address, across every gateway instance.
 * Counted whether or not an email then goes out (a reset for an unknown address counts too), so the
 * limit does not tell which addresses have accounts.
 */
export class EmailThrottle {
  private readonly now: () => Date;

  constructor(private readonly deps: { store: EmailThrottleStore; policy?: EmailThrottlePolicy; now?: () => Date }) {
    this.now = deps.now ?? (() => new Date());
  }

  async admit(address: string, ip: string | null): Promise<EmailAdmission> {
    const policy = this.deps.policy ?? DEFAULT_EMAIL_THROTTLE;
    const at = this.now();
    const windowStart = new Date(at.getTime() - policy.windowMs);
    // The IP address first: a client over its limit does not use up the address's sends.
    const checks: [string, number][] = [...(ip ? ([[`ip:${ip}`, policy.perIp]] as [string, number][]) : []), [`to:${digest(address.toLowerCase())}`, policy.perAddress]];
    for (const [subject, max] of checks) {
      const result = await this.deps.store.take(subject, at, windowStart, max);
      if (!result.taken) {
        return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((result.oldest.getTime() + policy.windowMs - at.getTime()) / 1000)) };
      }
    }
    return { ok: true };
  }
}

/** The refusal as doors show it: 429 `Too many attempts` with Retry-After. */
export function emailThrottledError(retryAfterSeconds: number): AppError {
  return new AppError('too_many_attempts', { retryAfter: retryAfterSeconds });
}

function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}
