// Memory and CPU of running processes from /proc (Linux): the kernel keeps each process's peak resident set
// (VmHWM), so one read at the end of a run gives the peak without sampling.
import fs from 'node:fs';

const CLOCK_TICKS_PER_S = 100;

export interface ProcessStats {
  pid: number;
  rssBytes: number;
  peakRssBytes: number;
  cpuSeconds: number;
}

export function processStats(pid: number): ProcessStats | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
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
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent)
        children.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return children;
}
