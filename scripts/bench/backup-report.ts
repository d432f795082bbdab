// The "Backups and restore" section of BENCHMARKS.md from the runs of scripts/bench/backup.ts.
import os from 'node:os';
import { percentile } from './samples.js';
import type { StoreKind } from './stores.js';

/** One store's backup under load and its restore. */
export interface BackupRun {
  store: StoreKind;
  /** Orders in the copy (as restored). */
  orders: number;
  backupS: number;
  bytes: number;
  /** Latency in ms of the orders sent before the backup (after the warm-up) and while it ran. */
  before: number[];
  during: number[];
  /** Orders not answered 2010, over the whole load (warm-up included). */
  errors: number;
  /** SQLite: the copy and its key into an empty folder; PostgreSQL: createdb and pg_restore. */
  restoreS: number;
  /** From the restored service's processes started to its /readyz answering and its worker ready. */
  readyS: number;
  /** Orders answered before the backup began, and how many of them the restored store lacks. */
  answeredBefore: number;
  missing: number;
  /** Seconds from the backup command's start to the acceptance of the newest order in the copy: its instant. */
  pointS: number;
}

const NAMES: Record<StoreKind, string> = {
  sqlite: 'SQLite (`admin store:backup`)',
  postgres: 'PostgreSQL (`pg_dump --format=custom`, `pg_restore`)',
};

const ms = (samples: number[]) =>
  `${percentile(samples, 50).toFixed(1)} / ${percentile(samples, 99).toFixed(1)} (${samples.length.toLocaleString('en')})`;

const row = (r: BackupRun) =>
  `| ${NAMES[r.store]} | ${r.orders.toLocaleString('en')} | ${r.backupS.toFixed(1)} | ${(r.bytes / 1048576).toFixed(0)} | ` +
  `${ms(r.before)} | ${ms(r.during)} | ${r.errors} | ${r.restoreS.toFixed(1)} | ${r.readyS.toFixed(1)} |`;

/** How the restored stores answered for the orders of before the backup, e.g. `SQLite 1,500 of 1,500, …`. */
const held = (runs: readonly BackupRun[]) =>
  runs
    .map(
      (r) =>
        `${r.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} ${(r.answeredBefore - r.missing).toLocaleString('en')} of ` +
        `${r.answeredBefore.toLocaleString('en')}${r.missing > 0 ? ` (**${r.missing} missing**)` : ''}, its instant ` +
        `${r.pointS.toFixed(2)} s after the command started`,
    )
    .join('; ');

export function backupSection(
  runs: readonly BackupRun[],
  run: { command: string; history: number; perSecond: number; baselineS: number },
): string {
  const cpus = os.cpus();
  return [
    `Command: \`${run.command}\``,
    '',
    '| store | orders in store | backup s | size MB | orders p50 / p99 ms (n), before | during the backup | errors | restore s | service ready s |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...runs.map(row),
    '',
    `Each store: ${run.history.toLocaleString('en')} orders of a year (generate-orders.ts) under the service as the Procfile runs it ` +
      '(web, worker, clock, compiled; SQLite durable, PostgreSQL a private server with fsync on), one client sending ' +
      `synchronous 2-listing orders at ${run.perSecond} a second, each on its schedule whatever the answers (an open loop), ` +
      `latency over the ${run.baselineS} s before the backup and over the orders sent while it ran; ` +
      `${cpus[0]?.model.trim()} (${cpus.length} cores), Node ${process.version}. ` +
      'Restore as docs/operating.md says, the live service stopped: the copy and `secrets.key` into an empty folder, or ' +
      '`createdb` and `pg_restore --no-owner`; "service ready" is from the start of its web, worker and clock to ' +
      '`/readyz` answering and the worker ready. Recovery point: the instant the copy began (SQLite: `VACUUM INTO`’s ' +
      "read transaction; PostgreSQL: pg_dump's snapshot), found from the newest order in each copy (when it was accepted); the " +
      `orders answered before the command started that the restored store held: ${held(runs)}.`,
  ].join('\n');
}
