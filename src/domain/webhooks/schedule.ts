/** The Standard Webhooks retry schedule: delays before each retry after the first attempt. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `5s,5m,30m` → milliseconds; null when any entry is not `<number><ms|s|m|h|d>`. */
export function parseSchedule(text: string): number[] | null {
  const parts = text.split(',').map((p) => p.trim());
  const delays: number[] = [];
  for (const part of parts) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(part);
    if (!m) return null;
    delays.push(Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]));
  }
  return delays.length > 0 && delays.length <= 50 ? delays : null;
}
