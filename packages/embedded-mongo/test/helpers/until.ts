/**
 * Waits for a condition instead of for an amount of time: tests share a machine that may be busy, so
 * they poll for what they need and fail only after a deadline far beyond any normal wait.
 *
 *   await until(() => events.length === 2, 'both events');
 *   const job = await until(async () => (await get()).status === 'done' && (await get()), 'job done');
 */
export const UNTIL_TIMEOUT_MS = 30_000;

export async function until<T>(
  check: () => T | Promise<T>,
  what = 'condition',
  { timeoutMs = UNTIL_TIMEOUT_MS, intervalMs = 10 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, false | null | undefined | 0 | ''>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
