// The store's upgrade from the release of 2026-11-27 (SQLite schema 13, PostgreSQL 14): the schema part at a
// process's start, the heavy part as `admin migrate`'s steps, in batches, interrupted and resumed, the orders read
// the same throughout. The same cases on whichever adapter the project names (test/helpers/store-contract.ts).
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { migrate } from '../../src/cli/commands/migrate.commands.js';
import type { CommandContext } from '../../src/cli/commands/command.js';
import { openStore } from '../../src/store/open-store.js';
import { FINISH_TURN_LOCK } from '../../src/store/postgres/migration-steps.postgres.js';
import { MigrationStepsPendingError } from '../../src/store/port/migrations.port.js';
import type {
  OrderWithItems,
  PendingMigration,
  SearchCriteria,
  Store,
} from '../../src/store/port/store.port.js';
import {
  accepted,
  approval,
  clientId,
  contractEnv,
  probe,
  reserveAll,
  shipping,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { toTheReleaseBefore } from '../helpers/release-before.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

const DAY = 86_400_000;

const byUpdate: SearchCriteria = {
  dateStart: T0 - DAY,
  dateEnd: T0 + 30 * DAY,
  sortOrder: 'ascending',
  limit: 50,
  itemUpdateStart: T0 + DAY,
};

const readAll = (on: Store, ids: readonly number[]): Promise<(OrderWithItems | null)[]> =>
  Promise.all(ids.map((id) => on.orders.get(id)));

const commandContext = (on: Store): CommandContext => ({
  config: loadConfig(contractEnv()),
  store: () => Promise.resolve(on),
  out: { note: () => undefined },
});

describe(`the store's upgrade from the release before on ${TEST_STORE}`, () => {
  it('needs no admin migrate on a fresh store: every step was done inside its migration', async () => {
    const steps = await store.steps.list();
    expect(steps.map((s) => s.version)).toEqual(TEST_STORE === 'postgres' ? [16, 17, 20] : [14, 15]);
    expect(steps.every((s) => s.done && s.upto === 0)).toBe(true);
  });

  it('migrates the schema at start, refuses to serve until admin migrate has filled the orders, in batches resumed, reading the same orders throughout', async () => {
    const waldens = [{ listingId: WALDEN, copies: 2 }];
    const settled = await accepted(waldens);
    await reserveAll(settled, waldens);
    await store.processing.settle({ ...approval(settled, `authorize:${settled}`), now: T0 + 2 * DAY });
    const moved = await accepted(waldens);
    await reserveAll(moved, waldens);
    await store.processing.settle({ ...approval(moved, `authorize:${moved}`), now: T0 + 2 * DAY });
    const item = (await store.orders.get(moved))!.items[0]!;
    expect(await store.items.applyMove(shipping(item, T0 + 4 * DAY))).toMatchObject({ kind: 'moved' });
    const untouched = await accepted(waldens);
    const ids = [settled, moved, untouched];
    const orders = await readAll(store, ids);
    const found = (await store.search.search(clientId, byUpdate)).orders.map((o) => o.order.orderId);
    expect(found).toEqual([settled, moved]);

    await toTheReleaseBefore(probe);
    const config = loadConfig(contractEnv());
    const asked: PendingMigration[] = [];
    const gate = async (_kind: string, pending: readonly PendingMigration[]) => void asked.push(...pending);
    // A serving process: it applies the schema part, then will not serve searches that would miss orders.
    const starting = openStore(config, 'test', () => undefined, { gate, stepsDone: true });
    await expect(starting).rejects.toBeInstanceOf(MigrationStepsPendingError);
    await expect(starting).rejects.toThrow(/admin -- migrate/);
    // Every migration since that release was asked about; on SQLite two of them cannot run beside it.
    expect(asked.map((m) => m.version)).toEqual(
      expect.arrayContaining(TEST_STORE === 'postgres' ? [15, 16, 17, 18, 19, 20] : [14, 15, 16]),
    );
    expect(asked.filter((m) => !m.besideOlder).map((m) => m.version)).toEqual(
      TEST_STORE === 'postgres' ? [] : [14, 15],
    );

    let admin = await openStore(config, 'admin', () => undefined);
    try {
      expect(await readAll(admin, ids)).toEqual(orders);
      const runs: { remaining: number[]; batches: number }[] = [];
      for (let run = 0; run < 50; run++) {
        const printed = (await migrate.run(
          ['--batch-size', '1', '--max-batches', '2'],
          commandContext(admin),
        )) as { remaining: number[]; batches: number };
        runs.push(printed);
        expect(await readAll(admin, ids)).toEqual(orders);
        if (printed.remaining.length === 0) break;
        // Interrupted: the next run, in a store opened anew, goes on where this one's last batch committed.
        await admin.close();
        admin = await openStore(config, 'admin', () => undefined);
      }
      // Orders one by one (ids up to the highest at the migration), then each step's last part.
      expect(runs.length).toBeGreaterThan(2);
      expect(runs.at(-1)!.remaining).toEqual([]);
      expect(runs.slice(0, -1).every((r) => r.batches === 2 && r.remaining.length > 0)).toBe(true);
      const steps = await admin.steps.list();
      expect(steps.every((s) => s.done)).toBe(true);
      const filled = steps.find((s) => s.version === (TEST_STORE === 'postgres' ? 17 : 15))!;
      expect(filled.position).toBe(filled.upto);
      expect(filled.upto).toBeGreaterThanOrEqual(untouched);

      const serving = await openStore(config, 'test', () => undefined, { gate, stepsDone: true });
      try {
        expect(await readAll(serving, ids)).toEqual(orders);
        const after = (await serving.search.search(clientId, byUpdate)).orders.map((o) => o.order.orderId);
        expect(after).toEqual(found);
      } finally {
        await serving.close();
      }
      const index = await probe.scalar<string>(
        TEST_STORE === 'postgres'
          ? `SELECT pg_get_indexdef('orders_client_items_updated'::regclass)`
          : `SELECT sql FROM sqlite_master WHERE name = 'orders_client_items_updated'`,
      );
      expect(index).toContain(TEST_STORE === 'postgres' ? 'INCLUDE (items_updated_at)' : 'items_updated_at');
      // A run with nothing left does nothing.
      expect(await migrate.run([], commandContext(admin))).toMatchObject({ batches: 0, remaining: [] });
    } finally {
      await admin.close();
    }
  });
  it.runIf(TEST_STORE === 'postgres')(
    "waits while another run builds a step's index, says so, then finishes the step itself",
    async () => {
      await accepted([{ listingId: WALDEN, copies: 1 }]);
      await toTheReleaseBefore(probe);
      const admin = await openStore(loadConfig(contractEnv()), 'admin', () => undefined);
      // Another run's turn at a step's last part, as it holds it while its index is built.
      const other = new pg.Client({ connectionString: contractEnv().DATABASE_URL });
      await other.connect();
      try {
        await other.query('BEGIN');
        await other.query('SELECT pg_advisory_xact_lock($1, $2)', [...FINISH_TURN_LOCK]);
        const notes: string[] = [];
        let waits!: () => void;
        const said = new Promise<void>((resolve) => {
          waits = resolve;
        });
        const note = (line: string) => {
          notes.push(line);
          if (line.includes('waiting')) waits();
        };
        const run = migrate.run([], { ...commandContext(admin), out: { note } }) as Promise<{
          remaining: number[];
        }>;
        await said;
        expect(notes).toEqual([
          expect.stringMatching(/^migration \d+: waiting while another admin migrate run builds an index$/),
        ]);
        expect((await admin.steps.list()).some((step) => !step.done)).toBe(true);
        await other.query('COMMIT');
        expect((await run).remaining).toEqual([]);
        expect((await admin.steps.list()).every((step) => step.done)).toBe(true);
      } finally {
        await other.end();
        await admin.close();
      }
    },
  );
  it('fills the orders once when two admin migrate runs go at once, each going on where the other left off', async () => {
    const waldens = [{ listingId: WALDEN, copies: 1 }];
    const ids: number[] = [];
    for (let n = 0; n < 6; n++) {
      const orderId = await accepted(waldens);
      await reserveAll(orderId, waldens);
      await store.processing.settle({ ...approval(orderId, `authorize:${orderId}`), now: T0 + 2 * DAY });
      ids.push(orderId);
    }
    const orders = await readAll(store, ids);
    await toTheReleaseBefore(probe);
    const config = loadConfig(contractEnv());
    // One of them on a pool of a single connection (DB_POOL_SIZE=1), which its run holds throughout.
    const admins = [
      await openStore(config, 'admin', () => undefined),
      await openStore({ ...config, DB_POOL_SIZE: 1 }, 'admin', () => undefined),
    ];
    try {
      type Printed = { remaining: number[]; orders: number };
      const printed = await Promise.all(
        admins.map((admin) => migrate.run(['--batch-size', '1'], commandContext(admin)) as Promise<Printed>),
      );
      // Both runs end well: they take turns batch by batch, and a step's last part (on PostgreSQL an index built
      // CONCURRENTLY) is done by one of them, which the other waits for and then finds done.
      expect(printed.map((run) => run.remaining)).toEqual([[], []]);
      const steps = await admins[0]!.steps.list();
      expect(steps.filter((step) => !step.done)).toEqual([]);
      const filled = steps.find((s) => s.version === (TEST_STORE === 'postgres' ? 17 : 15))!;
      expect(filled.position).toBe(filled.upto);
      // Every batch was done once, by whichever run took it.
      const passed = printed.reduce((sum, run) => sum + run.orders, 0);
      expect(passed).toBe(steps.reduce((sum, step) => sum + step.position, 0));
      expect(await migrate.run([], commandContext(admins[0]!))).toMatchObject({ batches: 0, remaining: [] });
      for (const admin of admins) expect(await readAll(admin, ids)).toEqual(orders);
    } finally {
      await Promise.all(admins.map((admin) => admin.close()));
    }
  });
});
