import { readFileSync } from 'node:fs';

// What /proc says about a process (Linux); 0 where there is no /proc, so the benchmark prints 0.
// The repository's own benchmarks (bench/) read CPU time through this file too.

/** Linux USER_HZ: /proc reports CPU time in these ticks. */
const CLK_TCK = 100;

/** CPU time (user + system, all threads) a process has used so far, in microseconds. */
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

/** Peak resident memory of a process, in MiB. */
export function peakRssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const kib = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return kib ? Math.round(Number(kib[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

/** Resident memory of a process now, in MiB. */
export function rssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return kib ? Math.round(Number(kib[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}
