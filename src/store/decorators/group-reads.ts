import { groupCalls } from '../../group-calls.js';
import { isStoreUnavailable } from '../store-errors.js';
import type {
  CatalogStore,
  OrderAsk,
  OrderStore,
  OrderWithItems,
  PricingCatalog,
} from '../port/store.port.js';

/** Most reads sharing one statement; more wait for the next. */
export const MAX_READS = 32;
/** A catalog read of more listings than this (a batch's) runs alone: a group's statement stays small. */
export const MAX_GROUPED_LISTINGS = 100;

/**
 * Gets of one order asked for in one turn of the event loop (the web's requests that arrived together) share one
 * statement, `getManyForClients`, instead of one each: on PostgreSQL each statement is a round trip that wakes one of the
 * server's processes on the cores the web shares with it. Each get is answered as `getForClient` would alone: its
 * order only when it is the client's, else null; a get alone is `getForClient` itself. Reads change nothing, so
 * a group that fails is read again get by get (unless the store is away), each answering for itself.
 */
export function groupOrderReads(orders: OrderStore, maxGroup = MAX_READS): OrderStore {
  const read = groupCalls(
    async (asks: readonly OrderAsk[]): Promise<(OrderWithItems | null)[]> => {
      if (asks.length === 1) return [await orders.getForClient(asks[0]!.clientId, asks[0]!.orderId)];
      const found = await orders.getManyForClients(asks);
      const byId = new Map(found.map((one) => [one.order.orderId, one]));
      return asks.map(({ clientId, orderId }) => {
        const one = byId.get(orderId);
        return one?.order.clientId === clientId ? one : null;
      });
    },
    maxGroup,
    { failsEveryone: isStoreUnavailable },
  );
  return { ...orders, getForClient: (clientId, orderId) => read({ clientId, orderId }) };
}

/**
 * Catalog reads for pricing asked for in one turn (the web's dry runs that arrived together) share one
 * `loadForPricing` of all their listings; each gets the catalog of its own listings, keyed in the order it asked,
 * as alone; a group that fails is read again ask by ask. A read of more than MAX_GROUPED_LISTINGS listings runs
 * alone.
 */
export function groupCatalogReads(catalog: CatalogStore, maxGroup = MAX_READS): CatalogStore {
  const load = groupCalls(
    async (asks: readonly (readonly number[])[]): Promise<PricingCatalog[]> => {
      if (asks.length === 1) return [await catalog.loadForPricing(asks[0]!)];
      const all = await catalog.loadForPricing([...new Set(asks.flat())]);
      return asks.map((listingIds) => catalogOf(all, listingIds));
    },
    maxGroup,
    { failsEveryone: isStoreUnavailable },
  );
  return {
    ...catalog,
    loadForPricing: (listingIds) =>
      listingIds.length > MAX_GROUPED_LISTINGS ? catalog.loadForPricing(listingIds) : load(listingIds),
  };
}

/** The part of `all` that `listingIds` name, keyed in their order, with the vendors of those listings. */
function catalogOf(all: PricingCatalog, listingIds: readonly number[]): PricingCatalog {
  const part: PricingCatalog = { listings: new Map(), vendors: new Map() };
  for (const id of listingIds) {
    const listing = all.listings.get(id);
    if (!listing || part.listings.has(id)) continue;
    part.listings.set(id, listing);
    const vendor = all.vendors.get(listing.vendorId);
    if (vendor && !part.vendors.has(vendor.vendorId)) part.vendors.set(vendor.vendorId, vendor);
  }
  return part;
}
