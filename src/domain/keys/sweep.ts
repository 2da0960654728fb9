import type { KeyCreditStore, PendingReservation } from './credit-limit.js';
import type { KeyRecord } from './records.js';

/** How far ahead `key.expiring` looks: a key expiring within 7 days is announced. */
export const EXPIRING_NOTICE_MS = 7 * 86_400_000;
/** A reservation pending this long has lost its process (a charge takes milliseconds). */
export const RESERVATION_LEASE_MS = 60_000;

/** Keys whose expiry is near and not yet announced, and the guarded "announced" marker. */
export interface KeyExpiryStore {
  /** Active keys with `now < expiresAt <= until` and no `key.expiring` sent for that expiry. */
  expiringUnannounced(now: Date, until: Date, limit: number): Promise<KeyRecord[]>;
  /** Marks it sent, only while the key's expiry is still `expiresAt` (an edit meanwhile deserves its own). */
  markExpiringAnnounced(keyId: string, expiresAt: Date, at: Date): Promise<boolean>;
}

export interface KeySweepReport {
  /** Reservations whose account charge never applied: the key got its credits back. */
  released: number;
  /** Reservations whose account charge applied: the key's credits stay spent. */
  confirmed: number;
  /** `key.expiring` events published. */
  expiring: number;
}

/**
 * The workers' sweep of keys: settles credit reservations a dead process left pending (every step once
 * per operation, so it may run anywhere, any number of times, concurrently with charges), and publishes
 * `key.expiring` once per key and expiry (the event's id derives from both; the marker is guarded).
 */
export class KeySweeper {
  constructor(
    private readonly deps: {
      credits: Pick<KeyCreditStore, 'stale'>;
      /** CreditService.settleReservation: voids the op on the account and releases or confirms. */
      settle: (pending: PendingReservation) => Promise<'released' | 'confirmed'>;
      expiry: KeyExpiryStore;
      publish: (accountId: string, key: { id: string; name: string; prefix: string; expiresAt: Date }) => Promise<void>;
      leaseMs?: number;
      batch?: number;
    },
  ) {}

  async sweep(now = new Date()): Promise<KeySweepReport> {
    const report: KeySweepReport = { released: 0, confirmed: 0, expiring: 0 };
    const batch = this.deps.batch ?? 100;
    const before = new Date(now.getTime() - (this.deps.leaseMs ?? RESERVATION_LEASE_MS));
    for (const pending of await this.deps.credits.stale(before, batch)) report[await this.deps.settle(pending)]++;
    for (const key of await this.deps.expiry.expiringUnannounced(now, new Date(now.getTime() + EXPIRING_NOTICE_MS), batch)) {
      if (!key.expiresAt) continue;
      await this.deps.publish(key.accountId, { id: key.id, name: key.name, prefix: key.prefix, expiresAt: key.expiresAt });
      if (await this.deps.expiry.markExpiringAnnounced(key.id, key.expiresAt, now)) report.expiring++;
    }
    return report;
  }
}
