// What a backup costs the service while it serves, and how long a restore takes, on each store, as
// docs/operating.md (Backups and restore) tells an operator to do them:
//   npx tsx scripts/bench/backup.ts [--stores sqlite,postgres] [--orders 200000] [--rate 50] [--warmup 10]
//     [--baseline 30] [--write]
// Each store is filled with --orders orders of a year by generate-orders.ts (a store of that size in under a
// minute, shaped as the search and retention benches' are; the service itself would take minutes and leave one
// client's identical orders), which is what the copy's length and pg_restore's index builds grow with. The service
// then runs as the Procfile runs it (web, worker, clock, compiled; SQLite durable; PostgreSQL a private server with
// fsync on, or DATABASE_URL's), and one client sends synchronous orders at --rate a second, on a fixed schedule
// (steady-orders.ts): --warmup seconds not measured, --baseline seconds measured, then the backup, measured while it
// runs: SQLite `admin store:backup --to PATH` (the compiled CLI that `npm run admin` runs), PostgreSQL
// `pg_dump --format=custom`. The live service stopped, the restore: SQLite the copy and secrets.key into an empty
// folder; PostgreSQL createdb and `pg_restore --no-owner`; then the service started on it until /readyz answers and
// its worker is ready, and the restored store is checked to hold every order answered before the backup began.
// Files go under the temporary folder (TMPDIR): it must be on a disk, not tmpfs, for the figures to mean anything.
// --write replaces the "Backups and restore" section of BENCHMARKS.md.
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { secretsKeyFile } from '../../src/store/secrets/secrets-key.js';
import { createDatabase, dropDatabase, requirePostgresBinDir } from '../postgres.js';
import { ensureRedis, freePort } from '../redis.js';
import { benchArgs } from './bench-args.js';
import { printSection } from './benchmarks-file.js';
import { backupSection, type BackupRun } from './backup-report.js';
import { addBuyer } from './buyer.js';
import { BENCH_STORE_SHAPE, generateOrders } from './generate-orders.js';
import { fiftyListings } from './lone-orders.js';
import { buildCheckout, ROOT, runBench, startProcfileProcess, stopProcess, waitFor } from './processes.js';
import { sleep } from './samples.js';
import { steadyOrders } from './steady-orders.js';
import {
  freshStore,
  orderServiceEnv,
  parseStoreKinds,
  postgresServer,
  serviceEnv,
  stopServers,
  stopServersOnInterrupt,
  storeFromEnv,
  type BenchStore,
  type StoreKind,
} from './stores.js';

const values = benchArgs({
  stores: 'sqlite,postgres',
  orders: '200000',
  rate: '50',
  warmup: '10',
  baseline: '30',
  write: false,
});
const STORES = parseStoreKinds(values.stores);
const HISTORY = Number(values.orders);
const RATE = Number(values.rate);
const WARMUP_S = Number(values.warmup);
const BASELINE_S = Number(values.baseline);
// PostgreSQL as operators run it: fsync, synchronous_commit and full_page_writes on.
process.env.BENCH_POSTGRES_DURABLE ??= 'true';

const run = promisify(execFile);
const say = (line: string) => process.stderr.write(`[bench-backup] ${line}\n`);
const seconds = (since: number) => (performance.now() - since) / 1000;
const LISTINGS = fiftyListings(993_001, 'Backup title', '97833333333');

/** The service's web, worker and clock on `store`, up and ready; how long that took. */
async function startService(store: BenchStore, redisUrl: string, logFile: string) {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const prefix = `backup${process.pid}${path.basename(logFile, '.log')}`;
  const env = orderServiceEnv(store, { redisUrl, prefix, port });
  const began = performance.now();
  const children = ['web', 'worker', 'clock'].map((name) => startProcfileProcess(ROOT, name, env, logFile));
  const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;
  await waitFor(
    async () =>
      children.some(exited) ||
      ((await fetch(`${baseUrl}/readyz`)).ok &&
        fs.readFileSync(logFile, 'utf8').includes('"msg":"worker ready"')),
    'the service ready',
    180_000,
    50,
  );
  if (children.some(exited)) throw new Error(`a process exited before the service was ready; log ${logFile}`);
  return { baseUrl, children, readyS: seconds(began) };
}

const stopService = (children: ChildProcess[]) => Promise.all(children.map(stopProcess));

/** The store's copy as docs/operating.md takes it, while the service serves: the file it wrote. */
async function backUp(store: BenchStore, dir: string): Promise<string> {
  if (store.kind === 'sqlite') {
    const to = path.join(dir, 'backups', 'orders.db');
    const admin = path.join(ROOT, 'dist/src/cli/admin.cli.js');
    await run(process.execPath, [admin, 'store:backup', '--to', to], {
      cwd: ROOT,
      env: serviceEnv(store, { LOG_LEVEL: 'warn' }),
    });
    return to;
  }
  const dump = path.join(dir, 'orders.dump');
  const { DATABASE_URL } = store.env as { DATABASE_URL: string };
  await run(path.join(postgresBin(), 'pg_dump'), ['--format=custom', '--file', dump, DATABASE_URL]);
  return dump;
}

const postgresBin = (): string => requirePostgresBinDir('pg_dump, pg_restore');

/** The copy restored as docs/operating.md says, into an empty folder or a new database: that store. */
async function restore(store: BenchStore, copy: string, dir: string): Promise<BenchStore> {
  if (store.kind === 'sqlite') {
    const folder = path.join(dir, 'restored');
    fs.mkdirSync(folder, { mode: 0o700 });
    const dbPath = path.join(folder, 'orders.db');
    fs.copyFileSync(copy, dbPath);
    fs.copyFileSync(secretsKeyFile((store.env as { DB_PATH: string }).DB_PATH), secretsKeyFile(dbPath));
    for (const file of [dbPath, secretsKeyFile(dbPath)]) fs.chmodSync(file, 0o600);
    return storeFromEnv({ ...process.env, DATABASE_URL: undefined, DB_PATH: dbPath });
  }
  const { url: serverUrl } = await postgresServer();
  const name = `bench_backup_restored_${process.pid}`;
  await dropDatabase(serverUrl, name);
  const url = await createDatabase(serverUrl, name);
  await run(path.join(postgresBin(), 'pg_restore'), ['--no-owner', '--dbname', url, copy]);
  const restored = storeFromEnv({ ...process.env, DATABASE_URL: url, SECRETS_KEY: store.env.SECRETS_KEY });
  return { ...restored, remove: () => dropDatabase(serverUrl, name) };
}

/**
 * The ids of the orders the load placed that `store` holds, its order count, and when its newest order was accepted
 * (the service's clock: this host's, corrected by Redis's, also on this host).
 */
async function ordersHeld(store: BenchStore): Promise<{ ids: Set<number>; count: number; newest: number }> {
  const probe = store.probe();
  try {
    const rows = await probe.all<{ id: number }>(
      'SELECT order_id AS id FROM orders WHERE order_id > ?',
      HISTORY,
    );
    return {
      ids: new Set(rows.map((r) => Number(r.id))),
      count: Number(await probe.scalar('SELECT count(*) FROM orders')),
      newest: Number(await probe.scalar('SELECT max(created_at) FROM orders')),
    };
  } finally {
    await probe.close();
  }
}

async function runStore(kind: StoreKind, redisUrl: string): Promise<BackupRun> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-backup-'));
  const store = await freshStore(kind, 'bench_backup');
  let restored: BenchStore | undefined;
  const children: ChildProcess[] = [];
  try {
    say(`${kind}: ${HISTORY} orders`);
    await generateOrders(store, { orders: HISTORY, ...BENCH_STORE_SHAPE });
    const buyer = await addBuyer(store, LISTINGS, 'backup client');
    const live = await startService(store, redisUrl, path.join(dir, 'live.log'));
    children.push(...live.children);

    const load = steadyOrders(live.baseUrl, buyer, LISTINGS, RATE);
    await sleep(WARMUP_S * 1000);
    const measuredFrom = performance.now();
    await sleep(BASELINE_S * 1000);
    say(`${kind}: backing up`);
    const backupStart = performance.now();
    const backupStartedAt = Date.now();
    const copy = await backUp(store, dir);
    const backupEnd = performance.now();
    await load.stop();
    await stopService(children.splice(0));
    const latency = (from: number, to: number) =>
      load.answered.filter((o) => o.sentAt >= from && o.sentAt < to).map((o) => o.answeredAt - o.sentAt);

    say(`${kind}: restoring`);
    const restoreStart = performance.now();
    restored = await restore(store, copy, dir);
    const restoreS = seconds(restoreStart);
    const again = await startService(restored, redisUrl, path.join(dir, 'restored.log'));
    children.push(...again.children);
    await stopService(children.splice(0));

    const held = await ordersHeld(restored);
    const before = load.answered.filter((o) => o.answeredAt < backupStart);
    const result: BackupRun = {
      store: kind,
      orders: held.count,
      backupS: (backupEnd - backupStart) / 1000,
      bytes: fs.statSync(copy).size,
      before: latency(measuredFrom, backupStart),
      during: latency(backupStart, backupEnd),
      errors: load.failed.length,
      restoreS,
      readyS: again.readyS,
      answeredBefore: before.length,
      missing: before.filter((o) => !held.ids.has(o.orderId)).length,
      pointS: (held.newest - backupStartedAt) / 1000,
    };
    for (const failed of load.failed.slice(0, 5)) say(`${kind}: an order failed: ${failed.what}`);
    say(
      `${kind}: ${JSON.stringify({ ...result, before: result.before.length, during: result.during.length })}`,
    );
    return result;
  } finally {
    await stopService(children);
    await restored?.remove();
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const redis = await ensureRedis();
  stopServersOnInterrupt(redis);
  try {
    if (fs.readFileSync('/proc/mounts', 'utf8').includes(` ${os.tmpdir()} tmpfs `))
      say(`${os.tmpdir()} is tmpfs: set TMPDIR to a folder on a disk for figures that mean anything`);
    await buildCheckout(ROOT);
    const runs: BackupRun[] = [];
    for (const kind of STORES) runs.push(await runStore(kind, redis.url));
    const command =
      `npx tsx scripts/bench/backup.ts --stores ${STORES.join(',')} --orders ${HISTORY} --rate ${RATE}` +
      ` --warmup ${WARMUP_S} --baseline ${BASELINE_S} --write`;
    printSection(
      'Backups and restore',
      backupSection(runs, { command, history: HISTORY, perSecond: RATE, baselineS: BASELINE_S }),
      values.write,
    );
    if (runs.some((r) => r.errors > 0 || r.missing > 0))
      throw new Error(
        'orders failed, or a restored store lacks orders answered before its backup: see above',
      );
  } finally {
    await stopServers(redis);
  }
}

runBench(main, { exitWhenDone: true });
