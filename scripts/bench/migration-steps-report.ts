// The "Migration steps at 1,000,000 orders" section of BENCHMARKS.md from scripts/bench/migration-steps.ts.
import type { StoreKind } from './stores.js';

/** One step of `admin migrate`, timed from a store put back into the state before it. */
export interface StepTiming {
  kind: StoreKind;
  version: number;
  what: string;
  seconds: number;
  batches: number;
  /** The orders the step passes (ids up to `upto` of its row): every order of the store. */
  orders: number;
}

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

const row = (t: StepTiming) =>
  `| ${STORE_NAME[t.kind]} ${t.version} | ${t.what} | ${t.seconds.toFixed(1)} | ${t.batches} | ${Math.round(t.orders / t.seconds).toLocaleString('en-US')} |`;

export function migrationStepsSection(
  timings: StepTiming[],
  run: {
    command: string;
    setting: string;
    orders: number;
    /** Seconds of `admin migrate` with nothing left, per store. */
    startS: Partial<Record<StoreKind, number>>;
  },
): string {
  const starts = Object.entries(run.startS)
    .map(([kind, s]) => `${s!.toFixed(2)} s on ${STORE_NAME[kind as StoreKind]}`)
    .join(', ');
  return [
    `Command: \`${run.command}\` (${run.setting})`,
    '',
    `Each step of \`admin migrate\` (docs/operating.md, Releases side by side) alone, on a store of ${run.orders.toLocaleString('en-US')} generated orders (scripts/bench/generate-orders.ts) put back into the state before it: its row of \`migration_steps\` pending again (position 0, every order, no done mark); for an index step the index before it in its place (SQLite 14: migration 9's \`orders_unsettled_client\`; PostgreSQL 16: migration 14's) or none (PostgreSQL 20, as after 17 on a store that took both as steps); for a fill, the column emptied and its index dropped, then the table rewritten (SQLite \`VACUUM\`, PostgreSQL \`VACUUM FULL\`) so that its rows are packed as after the migration's \`ADD COLUMN\`; the log checkpointed. Seconds are the compiled command's whole run (\`node dist/src/cli/admin.cli.js migrate\`, default batch of 1000 orders), its start included; an index step is one batch (its finish). A start once every step is done (the same command with nothing left: the store opened, its migrations and steps checked) took ${starts}.`,
    '',
    '| step | what it does | seconds | batches | orders per second |',
    '|---|---|--:|--:|--:|',
    ...timings.map(row),
  ].join('\n');
}
