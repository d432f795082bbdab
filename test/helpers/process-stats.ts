// Memory and CPU of running processes from /proc (Linux): the kernel keeps each process's peak resident set
// (VmHWM), so one read at the end of a run gives the peak without sampling. And the instructions a callgrind dump
// counted.
import fs from 'node:fs';

const CLOCK_TICKS_PER_S = 100;

export interface ProcessStats {
  pid: number;
  rssBytes: number;
  peakRssBytes: number;
  cpuSeconds: number;
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces): index 0 is field 3. */
function statFields(pid: number): string[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

export function processStats(pid: number): ProcessStats | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    // utime and stime are fields 14 and 15.
    const fields = statFields(pid);
    const ticks = Number(fields[11]) + Number(fields[12]);
    return {
      pid,
      rssBytes: kb('VmRSS') * 1024,
      peakRssBytes: kb('VmHWM') * 1024,
      cpuSeconds: ticks / CLOCK_TICKS_PER_S,
    };
  } catch {
    return null; // gone, or not Linux
  }
}

/** Direct children of a process, e.g. the web workers of a cluster primary. */
export function childPids(parent: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(statFields(Number(entry))[1]) === parent) children.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return children;
}

/**
 * CPU seconds of a process and of every descendant, the exited ones included (the kernel adds a reaped
 * child's time to its parent's cutime and cstime): e.g. a PostgreSQL server with its backends. 0 when gone.
 */
export function treeCpuSeconds(pid: number): number {
  try {
    const fields = statFields(pid);
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    return ticks / CLOCK_TICKS_PER_S + childPids(pid).reduce((sum, child) => sum + treeCpuSeconds(child), 0);
  } catch {
    return 0;
  }
}

/** CPU seconds the whole machine has spent busy (every core, every process; not idle or waiting on I/O). */
export function machineBusySeconds(): number {
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  // Fields 9 and 10 (guest time) are already counted in user and nice.
  const total = ticks.slice(0, 8).reduce((sum, n) => sum + n, 0);
  return (total - idle) / CLOCK_TICKS_PER_S;
}

/** The instructions (Ir) a callgrind dump file counted in all: its last `totals:` line. */
export function callgrindTotal(dumpFile: string): number {
  const text = fs.readFileSync(dumpFile, 'utf8');
  return Number(/^totals: (\d+)/m.exec(text.slice(text.lastIndexOf('\ntotals:')))?.[1] ?? 0);
}
