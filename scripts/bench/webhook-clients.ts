// Clients with a webhook and orders whose settlement records an event, for the webhook benchmarks.
import crypto from 'node:crypto';
import { ItemStatus } from '../../src/domain/item-status.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { newOrderEvent } from '../../src/services/order-events.js';
import type { Store, WebhookWithSecret } from '../../src/store/port/store.port.js';

const LISTING = 9_000_001;

/** The one vendor and listing the benchmark orders buy from. */
export async function importBenchListing(store: Store): Promise<void> {
  await store.catalog.importCatalog(
    [{ vendorId: 9001, name: 'Bench Books', country: 'USA', currency: 'USD', rates: [] }],
    [
      {
        listingId: LISTING,
        vendorId: 9001,
        title: 'Walden',
        isbn: '9780691096124',
        priceCents: 1000,
        quantity: 1,
      },
    ],
  );
}

/** A client with a webhook at `url`, and `settle()`, which records one event of a new order of it. */
export async function benchClient(
  store: Store,
  name: string,
  url: string,
): Promise<{ webhook: WebhookWithSecret; settle: () => Promise<void> }> {
  const now = Date.now();
  const client = await createClient(store.clients, name, now);
  const card = await addCard(store.clients, client.clientId, false, now);
  const webhook = await store.webhooks.add({ clientId: client.clientId, url, now });
  return { webhook, settle: () => settledOrder(store, client.clientId, card.cardId, Date.now()) };
}

const ADDRESS = { name: 'A', address1: '1 St', city: 'C', country: 'USA', zipcode: '1', phone: '1' };
const ITEM = {
  lineNo: 0,
  listingId: LISTING,
  vendorId: 9001,
  title: 'Walden',
  isbn: '9780691096124',
  lineQuantity: 1,
  maxPriceCents: null,
  minDays: null,
  maxDays: null,
  costCents: 1000,
};

/** An order of one copy that the worker found unavailable: one event, as the worker's reservation records it. */
async function settledOrder(store: Store, clientId: number, cardId: number, now: number): Promise<void> {
  const accepted = await store.orders.accept({
    clientId,
    requestId: crypto.randomUUID(),
    requestHash: 'bench',
    referenceId: null,
    domain: 'bookmarket.com',
    currency: 'USD',
    shippingMode: 'S',
    shipAddr: ADDRESS,
    billAddr: ADDRESS,
    cardId,
    totalMaxPriceCents: null,
    createdAt: now,
    items: [ITEM],
  });
  if (accepted.kind !== 'created') throw new Error('order not created');
  const [item] = (await store.orders.get(accepted.orderId))!.items;
  const rejected = { costCents: 1000, shipcostCents: 0, taxCents: 0, minDays: null, maxDays: null };
  await store.processing.reserve({
    orderId: accepted.orderId,
    items: [{ orderItemId: item!.orderItemId, ...rejected, status: ItemStatus.ITEM_UNAVAILABLE }],
    take: [],
    phase: 'settled',
    taxCents: null,
    taxModel: null,
    totalCents: 0,
    now,
    event: newOrderEvent(),
  });
}
