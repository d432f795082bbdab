// The store port's contract: paging stale orders and items, and the order key a search cursor stands for. The
// same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of this file's own
// (test/helpers/store-contract.ts).
import { describe, expect, it, onTestFinished } from 'vitest';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { LISTINGS } from '../helpers/fixtures.js';
import type { SearchCriteria } from '../../src/store/port/store.port.js';
import { SETS_ITEMS_UPDATED } from '../../src/store/postgres/items.postgres.js';
import { COVERING_INDEX } from '../../src/store/postgres/items-updated-covering.migration.js';
import {
  accepted,
  approval,
  clientId,
  giveUp,
  probe,
  reservationFor,
  reserveAll,
  shipping,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

/**
 * On PostgreSQL the adapter's steps keep orders.items_updated_at themselves, and the row trigger that earlier
 * versions rely on (items-updated-net.migration.ts) must not run for them: until the test ends, it fails if it
 * does. SQLite keeps its trigger as the way the column is kept.
 */
async function failTheNetIfRun(): Promise<void> {
  if (TEST_STORE !== 'postgres') return;
  const net = await probe.scalar<string>(`SELECT pg_get_functiondef('bo_order_items_updated'::regproc)`);
  await probe.exec(`CREATE OR REPLACE FUNCTION bo_order_items_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the trigger of earlier versions ran for order %', NEW.order_id; END $$`);
  onTestFinished(() => probe.exec(net));
}

describe(`the store's reconciliation and search keys on ${TEST_STORE}`, () => {
  it('pages stale orders and items by key, oldest first', async () => {
    const before = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 1000);
    const ids = [
      await accepted([{ listingId: WALDEN, copies: 1 }]),
      await accepted([{ listingId: WALDEN, copies: 1 }]),
      await accepted([{ listingId: WALDEN, copies: 1 }]),
    ];
    const all = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 1000);
    expect(all.slice(before.length).map((o) => o.orderId)).toEqual(ids);
    const firstTwo = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 2);
    const rest = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 1000, firstTwo.at(-1));
    expect([...firstTwo, ...rest]).toEqual(all);
    const created = all.find((o) => o.orderId === ids[1])!.createdAt;
    expect((await store.reconcile.staleOrders(created, 1000)).map((o) => o.orderId)).not.toContain(ids[1]);

    const queued = await store.reconcile.staleItems(S.QUEUED, Number.MAX_SAFE_INTEGER, 1000);
    expect(queued.length).toBeGreaterThanOrEqual(3);
    const page = await store.reconcile.staleItems(S.QUEUED, Number.MAX_SAFE_INTEGER, 1, queued[0]);
    expect(page).toEqual([queued[1]]);
  });

  it("finds a client's order key for a cursor, never another client's", async () => {
    const orderId = await accepted([{ listingId: LISTINGS[0]!.listingId, copies: 1 }]);
    const { createdAt } = (await store.orders.getForClient(clientId, orderId))!.order;
    expect(await store.search.orderKey(clientId, orderId)).toEqual({ createdAt, orderId });
    expect(await store.search.orderKey(clientId + 1, orderId)).toBeNull();
    expect(await store.search.orderKey(clientId, 2 ** 40)).toBeNull();
    expect(store.search.cursorKey.length).toBe(32);
  });

  it('finds an order by the latest update of its items, whichever step moved them', async () => {
    await failTheNetIfRun();
    const DAY = 86_400_000;
    const waldens = [{ listingId: WALDEN, copies: 2 }];
    // A reservation that finds one item over its maximum price.
    const rejected = await accepted(waldens);
    const { items } = (await store.orders.get(rejected))!;
    const reservation = reservationFor(rejected, items, [{ listingId: WALDEN, copies: 1 }]);
    reservation.items[1]!.status = S.MAX_PRICE_EXCEEDED;
    await store.processing.reserve({ ...reservation, now: T0 + DAY });
    // A settlement, one of a group, and an item moved after its order settled (the admin CLI, the lifecycle).
    const settled = await accepted(waldens);
    await reserveAll(settled, waldens);
    await store.processing.settle({ ...approval(settled, `authorize:${settled}`), now: T0 + 2 * DAY });
    const grouped = await accepted(waldens);
    await store.processing.settleMany([{ ...giveUp(grouped), now: T0 + 3 * DAY }]);
    const moved = await accepted(waldens);
    await reserveAll(moved, waldens);
    await store.processing.settle({ ...approval(moved, `authorize:${moved}`), now: T0 + 2 * DAY });
    const item = (await store.orders.get(moved))!.items[0]!;
    const move = shipping(item, T0 + 4 * DAY);
    expect(await store.items.applyMove(move)).toMatchObject({ kind: 'moved' });
    // Another item moved, at a time before the order's latest: the order keeps its time.
    const [, other] = (await store.orders.get(moved))!.items;
    await store.items.applyMove({ ...move, orderItemId: other!.orderItemId, now: T0 + 3 * DAY });
    const untouched = await accepted(waldens);

    const keys = await probe.all<{ order_id: number; items_updated_at: number | null }>(
      `SELECT order_id, items_updated_at FROM orders WHERE order_id IN (?, ?, ?, ?, ?) ORDER BY order_id`,
      rejected,
      settled,
      grouped,
      moved,
      untouched,
    );
    expect(
      keys.map((k) => [k.order_id, k.items_updated_at === null ? null : Number(k.items_updated_at)]),
    ).toEqual([
      [rejected, T0 + DAY],
      [settled, T0 + 2 * DAY],
      [grouped, T0 + 3 * DAY],
      [moved, T0 + 4 * DAY],
      [untouched, null],
    ]);

    const found = async (itemUpdateStart: number, itemUpdateEnd?: number, sortOrder = 'ascending') => {
      const criteria: SearchCriteria = {
        dateStart: T0 - DAY,
        dateEnd: T0 + 30 * DAY,
        sortOrder: sortOrder as SearchCriteria['sortOrder'],
        limit: 50,
        itemUpdateStart,
        ...(itemUpdateEnd === undefined ? {} : { itemUpdateEnd }),
      };
      const page = await store.search.search(clientId, criteria);
      return page.orders.map(({ order, items }) => [order.orderId, items.length]);
    };
    expect(await found(T0 + DAY)).toEqual([
      [rejected, 1],
      [settled, 2],
      [grouped, 2],
      [moved, 2],
    ]);
    expect(await found(T0 + DAY, T0 + 2 * DAY, 'descending')).toEqual([[rejected, 1]]);
    expect(await found(T0 + 3 * DAY, T0 + 4 * DAY)).toEqual([
      [grouped, 2],
      [moved, 1],
    ]);
    expect(await found(T0 + 4 * DAY)).toEqual([[moved, 1]]);
  });

  it("keeps an order's time when its settlement finds no pending item to move", async () => {
    await failTheNetIfRun();
    const DAY = 86_400_000;
    const orderId = await accepted([{ listingId: WALDEN, copies: 2 }]);
    const { items } = (await store.orders.get(orderId))!;
    // A reservation that rejects every item and leaves the order to be settled: the settlement moves none.
    const reservation = reservationFor(orderId, items, []);
    for (const item of reservation.items) item.status = S.MAX_PRICE_EXCEEDED;
    await store.processing.reserve({ ...reservation, now: T0 + DAY });
    const settled = await store.processing.settle({
      ...approval(orderId, `authorize:${orderId}`),
      ledger: null,
      now: T0 + 2 * DAY,
    });

    expect(settled).toBe(true);
    expect((await store.orders.get(orderId))!.items.map((i) => i.updatedAt)).toEqual([T0 + DAY, T0 + DAY]);
    const itemsUpdatedAt = await probe.scalar(
      'SELECT items_updated_at FROM orders WHERE order_id = ?',
      orderId,
    );
    expect(Number(itemsUpdatedAt)).toBe(T0 + DAY);
  });

  it.runIf(TEST_STORE === 'postgres')(
    "keeps an order's time when a process of an earlier version moves one of its items",
    async () => {
      const orderId = await accepted([{ listingId: WALDEN, copies: 2 }]);
      const [first, second] = (await store.orders.get(orderId))!.items;
      // An item move as the version before wrote it, without the setting of this version's statements, on a
      // connection whose transaction before was one of this version's (as a transaction pooler hands them out).
      const moveAsBefore = (orderItemId: number, at: number) =>
        probe.exec(`BEGIN; SET LOCAL ${SETS_ITEMS_UPDATED} = on; COMMIT;
          UPDATE order_items SET status = ${S.CANCELLED_BY_BUYER}, updated_at = ${at}, status_changed_at = ${at}
           WHERE order_item_id = ${orderItemId}`);
      await moveAsBefore(first!.orderItemId, T0 + 7 * 86_400_000);
      await moveAsBefore(second!.orderItemId, T0 + 6 * 86_400_000);
      const itemsUpdatedAt = await probe.scalar(
        'SELECT items_updated_at FROM orders WHERE order_id = ?',
        orderId,
      );
      expect(Number(itemsUpdatedAt)).toBe(T0 + 7 * 86_400_000);
    },
  );

  // SQLite reads the key's expression from its index already: no such migration.
  if (TEST_STORE === 'postgres')
    it.each([
      ['built under its lock', ''],
      ['taken as an operator built it beforehand', 'valid'],
      ['built again when an earlier build left it invalid', 'invalid'],
    ])(
      'upgrades the index of orders by item update time to hold items_updated_at (migration 20): %s',
      async (_label, before) => {
        const definition = () =>
          probe.scalar<string>(`SELECT pg_get_indexdef('orders_client_items_updated'::regclass)`);
        const covering = await definition();
        const key = 'orders (client_id, COALESCE(items_updated_at, created_at), created_at, order_id)';
        // The index as migration 17 left it, and what an operator may have built since.
        await probe.exec(`DROP INDEX orders_client_items_updated;
        CREATE INDEX orders_client_items_updated ON ${key};
        DELETE FROM schema_migrations WHERE version = 20;`);
        if (before) await probe.exec(`CREATE INDEX ${COVERING_INDEX} ON ${key} INCLUDE (items_updated_at)`);
        if (before === 'invalid')
          await probe.exec(
            `UPDATE pg_index SET indisvalid = false WHERE indexrelid = '${COVERING_INDEX}'::regclass`,
          );
        const builtBefore = await probe.scalar<number | null>(`SELECT to_regclass(?)::oid`, COVERING_INDEX);
        expect(await store.migrate()).toEqual([20]);
        // Built by `admin migrate`'s step, CONCURRENTLY, then swapped in.
        await store.steps.run({ batchSize: 100 });
        expect(await definition()).toBe(covering);
        expect(covering).toContain('INCLUDE (items_updated_at)');
        const now = await probe.scalar<number>(`SELECT 'orders_client_items_updated'::regclass::oid`);
        expect(Number(now) === Number(builtBefore)).toBe(before === 'valid');
        expect(await probe.scalar(`SELECT to_regclass(?)::text`, COVERING_INDEX)).toBeNull();
      },
    );

  it("upgrades a store of the version before: every order gets its items' latest update", async () => {
    const touched = await accepted([{ listingId: WALDEN, copies: 2 }]);
    await store.processing.settleMany([{ ...giveUp(touched), now: T0 + 5 * 86_400_000 }]);
    const untouched = await accepted([{ listingId: WALDEN, copies: 1 }]);
    // The schema as the version before left it: no column, index nor trigger.
    const version = TEST_STORE === 'postgres' ? 17 : 15;
    await probe.exec(
      TEST_STORE === 'postgres'
        ? `DROP TRIGGER order_items_updated ON order_items; DROP FUNCTION bo_order_items_updated();`
        : 'DROP TRIGGER order_items_updated; DROP INDEX orders_client_items_updated;',
    );
    await probe.exec(`ALTER TABLE orders DROP COLUMN items_updated_at;
      DELETE FROM schema_migrations WHERE version = ${version};`);
    expect(await store.migrate()).toEqual([version]);
    // The orders are filled by `admin migrate`'s step, a batch at a time.
    const step = () => store.steps.list().then((steps) => steps.find((s) => s.version === version)!);
    expect(await step()).toMatchObject({ done: false, position: 0, servesBefore: false });
    await store.steps.run({ batchSize: 1 });
    expect(await step()).toMatchObject({ done: true });
    const keys = await probe.all<{ items_updated_at: number | null }>(
      'SELECT items_updated_at FROM orders WHERE order_id IN (?, ?) ORDER BY order_id',
      touched,
      untouched,
    );
    expect(keys.map((k) => (k.items_updated_at === null ? null : Number(k.items_updated_at)))).toEqual([
      T0 + 5 * 86_400_000,
      null,
    ]);
  });
});
