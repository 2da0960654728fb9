// What the benchmarks share: percentiles of latencies, a sleep, and printing one line.

/** The p-th percentile (nearest rank) of `values`, in any order. */
export function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const say = (s: string) => process.stdout.write(`${s}\n`);
