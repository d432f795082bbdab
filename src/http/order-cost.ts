/**
 * What a request costs against the rate limit (docs/api.md#limits), each at least one. An order, alone or in a
 * batch, read from its body before it is checked (a malformed order costs at least one): a real order one request
 * per item, the work it stores and settles (an order of 250 items costs what 250 orders of one item would); a dry
 * run one per 10 listings, the work of pricing it (an order of 100 listings costs 10, as 10 orders of 10 would). A
 * read (a search's page, an order got) one per 10 items it returns: what reading, mapping and writing them takes
 * of the web's one thread, about what an ordinary search does.
 */
import { MAX_ITEMS } from '../services/orders/order-request.schema.js';

const LISTINGS_PER_REQUEST = 10;

export const ORDER_COST_RULE = `one per item of a real order, one per ${LISTINGS_PER_REQUEST} listings of a dry run, at least one per order`;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The items a listing line asks for, as sent: its quantity when a positive integer, else one. */
const itemsOf = (line: unknown): number => {
  const quantity = isObject(line) ? line.quantity : undefined;
  return typeof quantity === 'number' && Number.isSafeInteger(quantity) && quantity > 0 ? quantity : 1;
};

export function orderCost(order: unknown): number {
  if (!isObject(order) || !Array.isArray(order.listings)) return 1;
  const lines: unknown[] = order.listings;
  if (order.dryrun === true) return Math.max(1, Math.ceil(lines.length / LISTINGS_PER_REQUEST));
  // More than MAX_ITEMS is refused (4002); it costs what the most an order may hold does.
  return Math.max(
    1,
    Math.min(
      MAX_ITEMS,
      lines.reduce<number>((n, line) => n + itemsOf(line), 0),
    ),
  );
}

/** Items of a read that cost one request. */
export const ITEMS_PER_READ = 10;

/** What a read returning `items` items costs. */
export const readCost = (items: number): number => Math.max(1, Math.ceil(items / ITEMS_PER_READ));
