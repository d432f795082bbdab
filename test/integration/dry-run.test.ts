import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, UK_ADDRESS, US_ADDRESS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let buyer: Credentials;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('dry runner');
});
afterAll(() => service.close());

const dryRun = (overrides: Record<string, unknown>) =>
  signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken, { dryrun: true, ...overrides }));

describe('POST /v1/orders with dryrun: true', () => {
  it('prices a domestic order in the listing currency with state sales tax, every id 0, nothing stored', async () => {
    // Walden 10.00 USD ×2, Prairie Pages S domestic 3.99 + 1.99 = 5.98; CA 7.25 % of 25.98 = 1.88355 -> 1.88
    const res = await dryRun({ listings: [{ listingId: 2002, quantity: 2 }], referenceId: 'dry-1' });
    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2002');
    expect(res.body).toMatchObject({
      orderId: 0,
      currency: 'USD',
      dryrun: true,
      tax: 1.88,
      taxModel: 'SALES_TAX',
      referenceId: 'dry-1',
      listings: [
        {
          listingId: 2002,
          quantity: 2,
          vendorId: 601,
          minShippingDays: 3,
          maxShippingDays: 7,
          orderItems: [
            { orderItemId: 0, cost: 10, shipcost: 2.99, status: 5 },
            { orderItemId: 0, cost: 10, shipcost: 2.99, status: 5 },
          ],
        },
      ],
    });
    expect(res.body.listings[0].orderItems[0]).not.toHaveProperty('itemUpdateDate');
    expect(await service.probe.scalar('SELECT count(*) FROM orders')).toBe(0);
    expect(await service.stock(2002)).toBe(50);
  });

  it('converts a GBP vendor into USD for an international order, leftover shipping cent to the first item', async () => {
    // Middlemarch 12.50 GBP -> 1250×1.27 = 1587.5 -> 15.88 USD; S international first 9.00 GBP -> 11.43,
    // additional 4.00 GBP -> 5.08; 2 copies: 16.51 shipping split 8.26 + 8.25; tax CA 7.25 % of 48.27 = 3.4996 -> 3.50
    const res = await dryRun({ listings: [{ listingId: 1001, quantity: 2 }] });
    expect(res.status).toBe(200);
    expect(res.body.tax).toBe(3.5);
    expect(res.body.listings[0].orderItems).toEqual([
      { orderItemId: 0, cost: 15.88, shipcost: 8.26, status: 5 },
      { orderItemId: 0, cost: 15.88, shipcost: 8.25, status: 5 },
    ]);
  });

  it('has no tax fields where no rule applies and uses the domestic GBP rate for a UK address on .co.uk', async () => {
    // Bleak House 8.99 GBP, S domestic 3.50; GBR VAT 0 % -> tax 0 with taxModel VAT
    const res = await dryRun({
      domain: 'bookmarket.co.uk',
      shipAddr: UK_ADDRESS,
      billAddr: UK_ADDRESS,
      listings: [{ listingId: 1002, quantity: 1 }],
    });
    expect(res.body).toMatchObject({ currency: 'GBP', tax: 0, taxModel: 'VAT' });
    expect(res.body.listings[0].orderItems).toEqual([
      { orderItemId: 0, cost: 8.99, shipcost: 3.5, status: 5 },
    ]);

    const japan = { ...US_ADDRESS, country: 'JPN', provstate: undefined };
    const none = await dryRun({ shipAddr: japan, listings: [{ listingId: 2002, quantity: 1 }] });
    expect(none.body).not.toHaveProperty('tax');
    expect(none.body).not.toHaveProperty('taxModel');
  });

  it('marks maxPrice, unavailable stock and an unoffered mode, and totalMaxPrice stops the whole order', async () => {
    // Moby-Dick 15.00 + first 3.99 = 18.99 > 18.98 -> 53; Middlemarch ×4 > stock 3 -> 14; Zauberberg P not offered -> 14
    const res = await dryRun({
      shippingMode: 'S',
      listings: [
        { listingId: 2001, quantity: 1, maxPrice: 18.98 },
        { listingId: 1001, quantity: 4 },
      ],
    });
    expect(
      res.body.listings.map((l: { orderItems: { status: number }[] }) => l.orderItems[0]!.status),
    ).toEqual([53, 14]);
    expect(res.body.listings[0].orderItems[0]).toMatchObject({ cost: 15, shipcost: 0 });

    const priority = await dryRun({ shippingMode: 'P', listings: [{ listingId: 3001, quantity: 1 }] });
    expect(priority.body.listings[0].orderItems[0].status).toBe(14);

    // Walden 10.00 + 3.99 shipping + 7.25 % tax (1.01) = 15.00: allowed at 15.00, refused at 14.99
    const exact = await dryRun({ totalMaxPrice: 15, listings: [{ listingId: 2002, quantity: 1 }] });
    expect(exact.body.listings[0].orderItems[0].status).toBe(5);
    const over = await dryRun({ totalMaxPrice: 14.99, listings: [{ listingId: 2002, quantity: 1 }] });
    expect(over.body.listings[0].orderItems[0]).toMatchObject({ status: 55, shipcost: 0 });
  });

  it('shows an inactive seller as 54', async () => {
    await service.deps.store.catalog.deactivateVendor(701);
    const res = await dryRun({ listings: [{ listingId: 3001, quantity: 1 }] });
    expect(res.body.listings[0].orderItems[0].status).toBe(54);
  });
});
