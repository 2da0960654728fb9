import { readFileSync } from 'node:fs';

/** Linux USER_HZ: /proc reports CPU time in these ticks. */
const CLK_TCK = 100;

/**
 * CPU time (user + system, all threads) a process has used so far, in microseconds, read from
 * /proc/PID/stat; 0 where there is no /proc (benchmarks then print 0 for CPU figures).
 */
export function cpuMicros(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
  } catch {
    return 0;
  }
}
