import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemUpdate } from '../../src/cli/commands/item.commands.js';
import { CliError } from '../../src/cli/commands/command.js';
import { TRANSITIONS, type ItemStatusCode } from '../../src/domain/item-status.js';
import { failOrder } from '../../src/services/process-order.js';
import { processOrder } from '../helpers/process-order.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { ledgerBalance } from '../helpers/ledger.js';
import { runAdmin } from '../helpers/wait.js';

const WALDEN = 2002;
const CODES = Object.keys(TRANSITIONS).map(Number) as ItemStatusCode[];
const ALLOWED_BY_UPDATE = CODES.filter((c) => c !== 1).reduce((n, c) => n + TRANSITIONS[c].length, 0);

let service: TestService;
let buyer: Credentials;

interface Item {
  orderItemId: number;
  cost: number;
  shipcost: number;
  status: number;
  itemUpdateDate: string;
}

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(
    [...VENDORS, { ...VENDORS[1]!, vendorId: 901, name: 'Closing Down Books' }],
    [...LISTINGS, { ...LISTINGS[3]!, listingId: 9901, vendorId: 901, title: 'Last Orders' }],
  );
  await service.deps.store.catalog.deactivateVendor(901);
  buyer = await service.client('lifecycle buyer');
});
afterAll(() => service.close());

/** Places an order as a client does and, unless `queued`, runs the worker's own function on it. */
async function placeOrder(overrides: Record<string, unknown>, creds = buyer, queued = false) {
  const res = await signed(service.app, creds, 'POST', '/v1/orders', orderBody(creds.ccToken, overrides), {
    headers: { Prefer: 'respond-async' },
  });
  expect(res.status).toBe(200);
  const orderId = res.body.orderId as number;
  if (!queued) await processOrder({ ...service.deps, maxAttempts: 5 }, orderId);
  return { orderId, items: await itemsOf(orderId, creds) };
}

async function itemsOf(orderId: number, creds = buyer): Promise<Item[]> {
  const res = await signed(service.app, creds, 'GET', `/v1/orders/${orderId}`);
  return (res.body.listings as { orderItems: Item[] }[]).flatMap((l) => l.orderItems);
}

/** The operator command, run in this process against the service's database. */
async function update(args: string[]): Promise<{ item?: Item; error?: CliError }> {
  const ctx = {
    store: () => Promise.resolve(service.deps.store),
    config: service.config,
    out: { note: () => undefined },
  };
  try {
    return { item: (await itemUpdate.run(args, ctx)) as Item };
  } catch (error) {
    if (error instanceof CliError) return { error };
    throw error;
  }
}

const move = (id: number, status: number, ...extra: string[]) =>
  update(['--order-item', String(id), '--status', String(status), ...extra]);

interface ItemRow {
  status: number;
  updated_at: number;
  shipcost_cents: number;
  share: number;
}

async function row(id: number): Promise<ItemRow> {
  const found = await service.probe.get<ItemRow>(
    'SELECT status, updated_at, shipcost_cents, cost_cents + shipcost_cents + tax_cents AS share FROM order_items WHERE order_item_id = ?',
    id,
  );
  if (!found) throw new Error(`no order item ${id}`);
  return found;
}

const balance = (orderId: number) => ledgerBalance(service.probe, orderId);

const ledgerOf = (orderItemId: number) =>
  service.probe.all(
    'SELECT kind, amount_cents AS amount FROM ledger_entries WHERE order_item_id = ? ORDER BY entry_id',
    orderItemId,
  );

type Money = 'void' | 'refund' | 'extra';
interface Step {
  to: number;
  args?: string[];
  money?: Money;
}

// Seven walks through the table that make each of its ten update moves at least once.
const WALKS: { name: string; steps: Step[] }[] = [
  {
    name: 'shipped, then refunded',
    steps: [
      { to: 35, args: ['--company', 'UPS', '--tracking', '1Z999'] },
      { to: 24, money: 'refund' },
    ],
  },
  { name: 'cancelled by the seller', steps: [{ to: 14, money: 'void' }] },
  { name: 'cancelled by the buyer', steps: [{ to: 17, money: 'void' }] },
  {
    name: 'extra shipping accepted, then shipped',
    steps: [{ to: 93, args: ['--extra-shipping', '2.50'] }, { to: 4, money: 'extra' }, { to: 35 }],
  },
  {
    name: 'extra shipping rejected',
    steps: [
      { to: 93, args: ['--extra-shipping', '2.50'] },
      { to: 90, money: 'void' },
    ],
  },
  {
    name: 'extra shipping accepted, then cancelled by the seller',
    steps: [
      { to: 93, args: ['--extra-shipping', '0.05'] },
      { to: 4, money: 'extra' },
      { to: 14, money: 'void' },
    ],
  },
  {
    name: 'extra shipping accepted, then cancelled by the buyer',
    steps: [
      { to: 93, args: ['--extra-shipping', '12'] },
      { to: 4, money: 'extra' },
      { to: 17, money: 'void' },
    ],
  },
];

describe('item:update makes every move the table allows', () => {
  it('the walks cover all ten update moves', () => {
    const made = new Set(
      WALKS.flatMap((w) => w.steps.map((s, i) => `${i === 0 ? 5 : w.steps[i - 1]!.to}>${s.to}`)),
    );
    expect(made.size).toBe(ALLOWED_BY_UPDATE);
  });

  it.each(WALKS)(
    'when an ORDERED item is $name, then stock, shipping cost, ledger and payment follow each step',
    async ({ steps }) => {
      const { orderId, items } = await placeOrder({ listings: [{ listingId: WALDEN, quantity: 2 }] });
      const item = items[0]!;
      expect(item.status).toBe(5);
      let extra = 0; // cents the seller asked for with 93, which 4 adds
      for (const step of steps) {
        if (step.to === 93) extra = Math.round(Number(step.args![1]) * 100);
        const before = {
          row: await row(item.orderItemId),
          stock: await service.stock(WALDEN),
          entries: (await ledgerOf(item.orderItemId)).length,
        };
        const startedAt = Date.now();
        const { item: moved, error } = await move(item.orderItemId, step.to, ...(step.args ?? []));
        expect(error).toBeUndefined();
        const shipcost = before.row.shipcost_cents + (step.money === 'extra' ? extra : 0);
        expect(moved).toEqual(
          expect.objectContaining({
            orderItemId: item.orderItemId,
            cost: item.cost,
            shipcost: shipcost / 100,
            status: step.to,
          }),
        );
        expect(Date.parse(moved!.itemUpdateDate)).toBeGreaterThanOrEqual(startedAt);
        expect(await service.stock(WALDEN)).toBe(before.stock + (step.money === 'void' ? 1 : 0));
        const entries = await ledgerOf(item.orderItemId);
        expect(entries).toHaveLength(before.entries + (step.money ? 1 : 0));
        if (step.money) {
          const kind = step.money === 'extra' ? 'extra_shipping' : step.money;
          expect(entries.at(-1)).toEqual({ kind, amount: step.money === 'extra' ? extra : before.row.share });
        }
        const { ledger, bought, gateway } = await balance(orderId);
        expect(ledger).toBe(bought);
        expect(gateway).toBe(bought);
      }
      const [, other] = await itemsOf(orderId);
      expect(other!.status).toBe(5);
    },
  );

  it('when an item is shipped, then the order shows the shipping company and tracking id', async () => {
    const { orderId, items } = await placeOrder({ listings: [{ listingId: WALDEN, quantity: 1 }] });
    const { item } = await move(items[0]!.orderItemId, 35, '--company', 'DHL', '--tracking', 'JD0001');
    expect(item).toMatchObject({ status: 35, shippingCompany: 'DHL', shippingTrackingId: 'JD0001' });
    const res = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`);
    expect(res.body.listings[0]).toMatchObject({ shippingCompany: 'DHL', shippingTrackingId: 'JD0001' });
  });
});

/** Moves an item along a path of [status, ...options] steps; each must succeed. */
async function walk(id: number, ...steps: [number, ...string[]][]): Promise<number> {
  for (const [to, ...args] of steps) expect((await move(id, to, ...args)).error).toBeUndefined();
  return id;
}

/** One item in each of the fourteen statuses, each reached the way the contract says it is set. */
async function itemsInEveryStatus(): Promise<Map<number, number>> {
  const { items } = await placeOrder({ listings: [{ listingId: WALDEN, quantity: 8 }] });
  const ids = items.map((i) => i.orderItemId);
  const extra: [number, ...string[]] = [93, '--extra-shipping', '1'];
  const first = async (overrides: Record<string, unknown>, creds = buyer, queued = false) =>
    (await placeOrder(overrides, creds, queued)).items[0]!.orderItemId;
  const failing = await placeOrder({}, buyer, true);
  await failOrder(service.deps, failing.orderId);
  return new Map([
    [1, await first({}, buyer, true)],
    [5, ids[0]!],
    [35, await walk(ids[1]!, [35])],
    [24, await walk(ids[2]!, [35], [24])],
    [14, await walk(ids[3]!, [14])],
    [17, await walk(ids[4]!, [17])],
    [93, await walk(ids[5]!, extra)],
    [4, await walk(ids[6]!, extra, [4])],
    [90, await walk(ids[7]!, extra, [90])],
    [19, await first({}, await service.client('declined buyer', true))],
    [53, await first({ listings: [{ listingId: WALDEN, quantity: 1, maxPrice: 5 }] })],
    [54, await first({ listings: [{ listingId: 9901, quantity: 1 }] })],
    [55, await first({ totalMaxPrice: 1 })],
    [60, failing.items[0]!.orderItemId],
  ]);
}

describe('item:update refuses every move the table does not allow', () => {
  it('from each of the fourteen statuses to each code it may not reach, naming the moves it may make', async () => {
    const byStatus = await itemsInEveryStatus();
    let refused = 0;
    for (const from of CODES) {
      const id = byStatus.get(from)!;
      expect((await row(id)).status, `an item in ${from}`).toBe(from);
      const allowed = from === 1 ? [] : TRANSITIONS[from];
      for (const to of CODES.filter((c) => !allowed.includes(c))) {
        const before = { row: await row(id), stock: await service.stock(WALDEN), ledger: await ledgerOf(id) };
        const { error } = await move(id, to, ...(to === 93 ? ['--extra-shipping', '1'] : []));
        expect(error?.exitCode, `${from} -> ${to}`).toBe(1);
        expect(error!.message).toContain(`order item ${id} is `);
        if (from === 1) expect(error!.message).toContain('only the order worker moves a queued item on');
        else if (allowed.length === 0) expect(error!.message).toContain('which is final: no move is allowed');
        else
          for (const next of allowed) expect(error!.message).toMatch(new RegExp(`allowed: .*\\(${next}\\)`));
        expect({
          row: await row(id),
          stock: await service.stock(WALDEN),
          ledger: await ledgerOf(id),
        }).toEqual(before);
        refused += 1;
      }
    }
    expect(refused).toBe(CODES.length * CODES.length - ALLOWED_BY_UPDATE);
  });
});

describe('item:update checks its options before the table', () => {
  it.each([
    [
      ['--status', '93'],
      'an extra shipping amount greater than 0 is required with EXTRA_SHIPPING_REQUESTED (93)',
    ],
    [['--status', '93', '--extra-shipping', '1.234'], '--extra-shipping must be an amount greater than 0'],
    [['--status', '93', '--extra-shipping', '0'], '--extra-shipping must be an amount greater than 0'],
    [
      ['--status', '14', '--extra-shipping', '2'],
      'an extra shipping amount goes only with EXTRA_SHIPPING_REQUESTED (93)',
    ],
    [['--status', '14', '--company', 'UPS'], 'a shipping company or tracking id goes only with SHIPPED (35)'],
    [
      ['--status', '2'],
      '2 is not an item status; the codes are 1, 4, 5, 14, 17, 19, 24, 35, 53, 54, 55, 60, 90, 93',
    ],
    [['--status', 'shipped'], "--status must be a status code, got 'shipped'"],
  ])('%j is a usage error that changes nothing', async (args, message) => {
    const { items } = await placeOrder({});
    const id = items[0]!.orderItemId;
    const before = await row(id);
    const { error } = await update(['--order-item', String(id), ...args]);
    expect(error).toMatchObject({ exitCode: 2 });
    expect(error!.message).toContain(message);
    expect(await row(id)).toEqual(before);
  });

  it('an item that does not exist is reported as such', async () => {
    const { error } = await move(987654, 14);
    expect(error).toMatchObject({ exitCode: 1, message: 'no order item 987654' });
  });
});

const admin = (args: string[]) => runAdmin(service.env, args);

describe('the admin CLI process', () => {
  it('when the buyer and the seller cancel the same item at once, then one move wins and the stock comes back once', async () => {
    const { orderId, items } = await placeOrder({ listings: [{ listingId: WALDEN, quantity: 1 }] });
    const id = String(items[0]!.orderItemId);
    const stock = await service.stock(WALDEN);
    const runs = await Promise.all([
      admin(['item:update', '--order-item', id, '--status', '17']),
      admin(['item:update', '--order-item', id, '--status', '14']),
    ]);
    const won = runs.filter((r) => r.code === 0);
    const lost = runs.filter((r) => r.code !== 0);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    const item = JSON.parse(won[0]!.stdout);
    expect(Object.keys(item)).toEqual(['orderItemId', 'cost', 'shipcost', 'status', 'itemUpdateDate']);
    expect(lost[0]).toMatchObject({ code: 1, stdout: '' });
    expect(lost[0]!.stderr).toContain(`admin item:update: order item ${id} is `);
    expect(lost[0]!.stderr).toContain('which is final: no move is allowed');
    expect(await service.stock(WALDEN)).toBe(stock + 1);
    expect(await ledgerOf(Number(id))).toEqual([{ kind: 'void', amount: (await row(Number(id))).share }]);
    const { ledger, bought, gateway } = await balance(orderId);
    expect([ledger, gateway]).toEqual([bought, bought]);
  });

  it('when a move is refused, then it exits 1 and names the moves that are allowed', async () => {
    const { items } = await placeOrder({});
    const run = await admin(['item:update', '--order-item', String(items[0]!.orderItemId), '--status', '24']);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toContain(
      'is ORDERED (5): cannot move to REFUNDED (24); allowed: SHIPPED (35), ITEM_UNAVAILABLE (14), CANCELLED_BY_BUYER (17), EXTRA_SHIPPING_REQUESTED (93)',
    );
  });
});

describe('search by item update date', () => {
  it('when items move, then the item update filters return exactly the moved items with their new date', async () => {
    const { orderId, items } = await placeOrder({ listings: [{ listingId: WALDEN, quantity: 3 }] });
    await new Promise((r) => setTimeout(r, 5));
    const since = new Date().toISOString();
    const shipped = (await move(items[0]!.orderItemId, 35)).item!;
    const cancelled = (await move(items[2]!.orderItemId, 17)).item!;
    const query = `/v1/orders?orderId=${orderId}&itemUpdateDateStart=${encodeURIComponent(since)}`;
    const res = await signed(service.app, buyer, 'GET', query);
    expect(res.status).toBe(200);
    expect(res.body.orders).toHaveLength(1);
    expect(res.body.orders[0].listings[0].orderItems).toEqual([shipped, cancelled]);
    const before = await signed(
      service.app,
      buyer,
      'GET',
      query.replace('itemUpdateDateStart', 'itemUpdateDateEnd'),
    );
    expect(before.body.orders[0].listings[0].orderItems.map((i: Item) => i.orderItemId)).toEqual([
      items[1]!.orderItemId,
    ]);
  });
});
