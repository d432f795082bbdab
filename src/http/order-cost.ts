/**
 * What an order costs against the rate limit, alone or in a batch, read from its body before it is checked (a
 * malformed order costs at least one): a real order one request per item, the work it stores and settles (an
 * order of 250 items costs what 250 orders of one item would, issue 41); a dry run one per 10 listings, the work
 * of pricing it (an order of 100 listings costs 10, as 10 orders of 10 would). At least one either way.
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
