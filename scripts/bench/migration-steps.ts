// The time of each large step of `admin migrate` (docs/operating.md, Releases side by side: SQLite 14 and 15,
// PostgreSQL 16, 17 and 20) on a store of --orders generated orders: the store is filled once, then for each step
// put back into the state before it and the compiled `admin migrate` run to its end; then the same command with
// nothing left, the start a process needs once the steps are done. PostgreSQL durable (a private server with fsync
// on, or DATABASE_URL's), SQLite as the service opens it. Writes the "Migration steps at 1,000,000 orders" section.
//   node --import tsx scripts/bench/migration-steps.ts [--orders 1000000] [--stores sqlite,postgres] [--write]
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { COVERING_INDEX } from '../../src/store/postgres/items-updated-covering.migration.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { collect } from '../../test/helpers/wait.js';
import { benchArgs } from './bench-args.js';
import { printSection } from './benchmarks-file.js';
import { BENCH_STORE_SHAPE, generateOrders } from './generate-orders.js';
import { migrationStepsSection, type StepTiming } from './migration-steps-report.js';
import { buildCheckout, ROOT, runBench } from './processes.js';
import {
  freshStore,
  parseStoreKinds,
  serviceEnv,
  stopPostgresServer,
  type BenchStore,
  type StoreKind,
} from './stores.js';

const values = benchArgs({ orders: '1000000', stores: 'sqlite,postgres', write: false });
const say = (line: string) => process.stderr.write(`[bench-migration-steps] ${line}\n`);
const ADMIN = path.join(ROOT, 'dist/src/cli/admin.cli.js');

interface StepCase {
  version: number;
  what: string;
  /** Statements that put the store back into the state before the step, each run on its own (VACUUM included). */
  before: string[];
  /** The column of `orders` a fill empties and fills again: as many orders must hold a value after it as before. */
  fills?: string;
}

const STEPS: Record<StoreKind, StepCase[]> = {
  sqlite: [
    {
      version: 14,
      what: 'rebuilds `orders_unsettled_client` with the item count',
      before: [
        'DROP INDEX IF EXISTS orders_unsettled_client',
        "CREATE INDEX orders_unsettled_client ON orders (client_id) WHERE phase <> 'settled'",
      ],
    },
    {
      version: 15,
      what: 'fills `orders.items_updated_at`, builds `orders_client_items_updated`',
      fills: 'items_updated_at',
      before: [
        'DROP INDEX IF EXISTS orders_client_items_updated',
        'UPDATE orders SET items_updated_at = NULL',
        'VACUUM',
      ],
    },
  ],
  postgres: [
    {
      version: 16,
      what: 'rebuilds `orders_unsettled_client` with the item count (concurrently)',
      before: [
        'DROP INDEX IF EXISTS orders_unsettled_client_items',
        'DROP INDEX IF EXISTS orders_unsettled_client',
        'CREATE INDEX orders_unsettled_client ON orders (client_id) WHERE NOT settled',
      ],
    },
    {
      version: 17,
      what: 'fills `orders.items_updated_at`',
      fills: 'items_updated_at',
      before: [
        'DROP INDEX IF EXISTS orders_client_items_updated',
        `DROP INDEX IF EXISTS ${COVERING_INDEX}`,
        'UPDATE orders SET items_updated_at = NULL',
        'VACUUM FULL orders',
        'ANALYZE orders',
      ],
    },
    {
      version: 20,
      what: 'builds `orders_client_items_updated` (concurrently)',
      before: ['DROP INDEX IF EXISTS orders_client_items_updated', `DROP INDEX IF EXISTS ${COVERING_INDEX}`],
    },
  ],
};

/** The step's row pending again over every order, and nothing of earlier writes left to flush into the timing. */
async function putBack(probe: Probe, kind: StoreKind, step: StepCase): Promise<number> {
  for (const sql of step.before) await probe.exec(sql);
  await probe.exec(
    `UPDATE migration_steps SET position = 0, upto = (SELECT max(order_id) FROM orders), done_at = NULL
      WHERE version = ${step.version}`,
  );
  const row = await probe.get<{ upto: number; done: number }>(
    'SELECT upto, (done_at IS NOT NULL) AS done FROM migration_steps WHERE version = ?',
    step.version,
  );
  if (!row || Number(row.done))
    throw new Error(`migration ${step.version}: its step could not be made pending`);
  // A CHECKPOINT needs a superuser on a server of DATABASE_URL's: then the server's own checkpoints do it.
  await probe
    .exec(kind === 'sqlite' ? 'PRAGMA wal_checkpoint(TRUNCATE)' : 'CHECKPOINT')
    .catch(() => undefined);
  return Number(row.upto);
}

interface Migrated {
  seconds: number;
  batches: number;
  steps: { migration: number; done: boolean }[];
  remaining: number[];
}

/** `admin migrate` as an operator runs it (compiled), timed from spawn to exit. */
async function migrate(store: BenchStore): Promise<Migrated> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [ADMIN, 'migrate'], {
    cwd: ROOT,
    env: serviceEnv(store),
  });
  const run = await collect(child);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.code !== 0) throw new Error(`admin migrate exited ${run.code}:\n${run.stderr}`);
  return { seconds, ...(JSON.parse(run.stdout) as Omit<Migrated, 'seconds'>) };
}

async function timeSteps(kind: StoreKind, orders: number): Promise<{ steps: StepTiming[]; startS: number }> {
  const store = await freshStore(kind, 'bench_steps');
  const probe = store.probe();
  try {
    say(`${kind}: generating ${orders} orders`);
    const made = await generateOrders(store, { ...BENCH_STORE_SHAPE, orders });
    say(`${kind}: generated in ${made.seconds} s (${made.items} items)`);
    const steps: StepTiming[] = [];
    for (const step of STEPS[kind]) {
      const filled = () => probe.scalar(`SELECT count(${step.fills}) FROM orders`);
      const before = step.fills ? await filled() : 0;
      const upto = await putBack(probe, kind, step);
      const run = await migrate(store);
      const mine = run.steps.find((s) => s.migration === step.version);
      if (!mine?.done || run.remaining.length > 0)
        throw new Error(`migration ${step.version}: not done by admin migrate: ${JSON.stringify(run)}`);
      const after = step.fills ? await filled() : 0;
      if (after !== before || (step.fills && before === 0))
        throw new Error(`migration ${step.version}: ${after} orders filled, ${before} before`);
      const { version, what } = step;
      steps.push({ kind, version, what, seconds: run.seconds, batches: run.batches, orders: upto });
      say(`${kind} ${step.version}: ${JSON.stringify(steps.at(-1))}`);
    }
    const starts: number[] = [];
    for (let i = 0; i < 3; i++) starts.push((await migrate(store)).seconds);
    return { steps, startS: starts.sort((a, b) => a - b)[1]! };
  } finally {
    await probe.close();
    await store.remove();
  }
}

async function main() {
  // As operators run PostgreSQL: a private server keeps fsync, synchronous_commit and full page writes on.
  process.env.BENCH_POSTGRES_DURABLE = 'true';
  const kinds = parseStoreKinds(values.stores);
  const orders = Number(values.orders);
  // The section's title names the size: figures of another size are printed, never written under it.
  if (values.write && orders !== 1_000_000) throw new Error('--write is for --orders 1000000 only');
  await buildCheckout(ROOT);
  const timings: StepTiming[] = [];
  const startS: Partial<Record<StoreKind, number>> = {};
  try {
    for (const kind of kinds) {
      const timed = await timeSteps(kind, orders);
      timings.push(...timed.steps);
      startS[kind] = timed.startS;
    }
  } finally {
    await stopPostgresServer();
  }
  const section = migrationStepsSection(timings, {
    command: `node --import tsx scripts/bench/migration-steps.ts --orders ${orders} --stores ${values.stores}`,
    setting: `${os.cpus().length} cores, Node ${process.version}${kinds.includes('postgres') ? `, PostgreSQL ${process.env.DATABASE_URL ? 'of DATABASE_URL' : 'private, fsync on'}` : ''}`,
    orders,
    startS,
  });
  printSection('Migration steps at 1,000,000 orders', section, values.write);
}

runBench(main, { exitWhenDone: true });
