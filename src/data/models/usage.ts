import { Schema, type Connection, type Model } from 'mongoose';
import type { MeteredService } from '../../domain/usage/types.js';
import { Kept } from '../../domain/kept.js';

/** Counters of one bucket, on the account (`usage.<bucket>`); a field is absent until first counted. */
export interface UsageCounters {
  calls?: number;
  credits?: number;
  refunded?: number;
}

/**
 * Stored shape of a rolled-up bucket (collection `usage`): one document per account, UTC day, service
 * and source. `_id` is `<accountId>:<bucket>`, so rolling a bucket up again finds the same document.
 */
export interface UsageDoc {
  _id: string;
  accountId: string;
  day: Date;
  service: MeteredService;
  source: string;
  calls: number;
  credits: number;
  refunded: number;
}

const usageSchema = new Schema<UsageDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    day: { type: Date, required: true },
    service: { type: String, required: true },
    source: { type: String, required: true },
    calls: { type: Number, required: true },
    credits: { type: Number, required: true },
    refunded: { type: Number, required: true },
  },
  { collection: 'usage', versionKey: false },
);
usageSchema.index({ accountId: 1, day: 1 });

export function usageModel(connection: Connection): Model<UsageDoc> {
  return (connection.models.Usage as Model<UsageDoc> | undefined) ?? connection.model<UsageDoc>('Usage', usageSchema);
}

const SERVICES: readonly MeteredService[] = ['images', 'definitions'];
/** A source is a key id or `console`: it becomes part of a field name, so no `.` and no `$`. */
const SOURCE = /^[A-Za-z0-9_-]{1,64}$/;

/** Name of the bucket (a field of the account's `usage`) counting `service` calls from `source` on `day` (a UTC midnight). */
export function usageBucket(day: Date, service: MeteredService, source: string): string {
  if (!SERVICES.includes(service)) throw new Error(`not a metered service: ${service}`);
  if (!SOURCE.test(source)) throw new Error(`a usage source must be a key id or "console", got ${JSON.stringify(source)}`);
  return `${yyyymmdd(day)}_${service}_${source}`;
}

/** The field paths, on the account, of a bucket's counters (`usage.<bucket>.calls` and so on). */
export interface UsageCounterPaths {
  readonly calls: string;
  readonly credits: string;
  readonly refunded: string;
}

/**
 * usageBucket's counters as field paths of the account. Every charge names them: they are made once
 * per day, service and source, not per charge (it is on the lookup's path).
 */
export function usageCounterPaths(day: Date, service: MeteredService, source: string): UsageCounterPaths {
  // Per service, by source (the key id the principal carries): no key string is built per charge.
  const { paths } = today(day);
  const bySource = Object.hasOwn(paths, service) ? paths[service] : undefined;
  const known = bySource?.get(source);
  if (known) return known;
  // usageBucket refuses anything but a metered service and a well-formed source.
  const field = `usage.${usageBucket(day, service, source)}`;
  return bySource!.add(source, { calls: `${field}.calls`, credits: `${field}.credits`, refunded: `${field}.refunded` });
}

// Every charge names its day: its text and its buckets' paths are made once per day, not per charge.
let lastDay = dayOf(Number.NaN, '');
function today(day: Date): typeof lastDay {
  const ms = day.getTime();
  if (ms !== lastDay.ms) lastDay = dayOf(ms, day.toISOString().slice(0, 10).replace(/-/g, ''));
  return lastDay;
}
function dayOf(ms: number, text: string) {
  const paths = Object.fromEntries(SERVICES.map((s) => [s, new Kept<string, UsageCounterPaths>(4096)])) as Record<MeteredService, Kept<string, UsageCounterPaths>>;
  return { ms, text, paths };
}
function yyyymmdd(day: Date): string {
  return today(day).text;
}

/** The day, service and source a bucket counts; null for a name usageBucket never makes. */
export function parseUsageBucket(bucket: string): { day: Date; service: MeteredService; source: string } | null {
  const m = /^(\d{4})(\d{2})(\d{2})_([a-z]+)_(.+)$/.exec(bucket);
  if (!m) return null;
  const service = m[4] as MeteredService;
  const day = new Date(`${m[1]}-${m[2]}-${m[3]}T00:00:00.000Z`);
  if (!SERVICES.includes(service) || Number.isNaN(day.getTime())) return null;
  return { day, service, source: m[5]! };
}
