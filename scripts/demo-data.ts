import fs from 'node:fs';
import path from 'node:path';
import { importCatalogFile } from '../src/services/catalog-import.js';
import { addCard, createClient } from '../src/services/client-keys.js';
import { writePrivateFile } from '../src/store/secrets/private-files.js';
import type { Store } from '../src/store/port/store.port.js';

/**
 * The demo client's profile. It names no service address: `call` sends to the running `npm start`
 * (data/runtime.json), so a profile made by a start on another port never points a signed request there.
 */
export interface DemoClient {
  accessKey: string;
  secretKey: string;
  ccToken: string;
}

/**
 * Imports the demo catalog (an upsert, so stock is topped up on every start) and makes the demo client once per
 * store: a profile whose client is not in this store (made for another one) is replaced.
 */
export async function seedDemo(store: Store, profilePath: string): Promise<DemoClient> {
  const catalogFile = JSON.parse(
    fs.readFileSync(path.join(import.meta.dirname, 'demo-catalog.json'), 'utf8'),
  );
  const parsed = await importCatalogFile(store.catalog, catalogFile);
  if (!parsed.ok) throw new Error(`demo catalog is invalid:\n  ${parsed.problems.join('\n  ')}`);

  const { clients } = store;
  const existing = readProfile(profilePath);
  const stored = existing && (await clients.findByAccessKey(existing.accessKey));
  // The stored secret, not the profile's: after a roll of the demo client's secret the profile follows it.
  const demo =
    stored && existing && (await clients.findCard(existing.ccToken))
      ? { accessKey: stored.accessKey, secretKey: stored.secretKey, ccToken: existing.ccToken }
      : await newDemoClient(store);
  // Written again every time: a profile of an older version named the address of the start that made it.
  writePrivateFile(profilePath, `${JSON.stringify(demo, null, 2)}\n`, { replace: true });
  return demo;
}

async function newDemoClient({ clients }: Store): Promise<DemoClient> {
  const client = await createClient(clients, 'demo client', Date.now());
  const card = await addCard(clients, client.clientId, false, Date.now());
  return { accessKey: client.accessKey, secretKey: client.secretKey, ccToken: card.token };
}

function readProfile(profilePath: string): DemoClient | null {
  try {
    return JSON.parse(fs.readFileSync(profilePath, 'utf8')) as DemoClient;
  } catch {
    return null;
  }
}

/** The demo buyer's ship and bill address (the tests' US address too: test/helpers/fixtures.ts). */
export const DEMO_ADDRESS = {
  name: 'Ada Reader',
  address1: '1 Market St',
  city: 'San Francisco',
  provstate: 'CA',
  country: 'USA',
  zipcode: '94105',
  phone: '+1 415 555 0100',
};

/**
 * The demo's order bodies, written next to the profile so the printed commands work as they are: a dry run
 * (`demo-dryrun.json`) and the same order for real (`demo-order.json`). Returns both paths.
 */
export function writeDemoOrders(
  dir: string,
  ccToken: string,
  listingId: number,
): { dryRun: string; order: string } {
  const body = {
    shipAddr: DEMO_ADDRESS,
    billAddr: DEMO_ADDRESS,
    ccToken,
    listings: [{ listingId, quantity: 2 }],
    shippingMode: 'S',
    domain: 'bookmarket.com',
  };
  const dryRun = path.join(dir, 'demo-dryrun.json');
  const order = path.join(dir, 'demo-order.json');
  // They hold the card token: readable by their owner only, as the profile is.
  for (const [file, content] of [
    [dryRun, { ...body, dryrun: true }],
    [order, body],
  ] as const) {
    writePrivateFile(file, `${JSON.stringify(content, null, 2)}\n`, { replace: true });
  }
  return { dryRun, order };
}
