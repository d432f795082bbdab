// Which cores the processes of a benchmark run on (Linux, util-linux's taskset): to give a database server cores
// of its own on one host, as a deployment that outgrows one host gives it a host of its own.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { childPids } from '../../test/helpers/process-stats.js';

/**
 * `core` checked against this machine: a core number that leaves at least one other core. Returns the other
 * cores, for everything else of the run.
 */
export function coresBesides(core: number): number[] {
  const count = os.cpus().length;
  if (!Number.isInteger(core) || core < 0 || core >= count)
    throw new Error(`no core ${core} on this machine (cores 0 to ${count - 1})`);
  if (count < 2) throw new Error('one core only: nothing is left for the rest of the run');
  return Array.from({ length: count }, (_, n) => n).filter((n) => n !== core);
}

/** Where --database-core puts the database server and the rest, in words. */
export function placementOf(databaseCore: number): string {
  const others = coresBesides(databaseCore);
  return `the database server on core ${databaseCore}, everything else on core${others.length > 1 ? 's' : ''} ${others.join(', ')}`;
}

/**
 * Pins a process, every thread of it and every descendant to `cores`. Processes they start later inherit it:
 * a PostgreSQL server's backends, forked by its postmaster, run where the postmaster does.
 */
export function pinTree(pid: number, cores: readonly number[]): void {
  execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', cores.join(','), String(pid)], {
    stdio: 'ignore',
  });
  for (const child of childPids(pid)) {
    try {
      pinTree(child, cores);
    } catch {
      // exited while we looked
    }
  }
}
