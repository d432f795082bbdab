import fs from 'node:fs';
import path from 'node:path';
import { importCatalogFile } from '../src/services/catalog-import.js';
import { addCard, createClient } from '../src/services/client-keys.js';
import type { Store } from '../src/store/port/store.port.js';

export interface DemoClient {
  baseUrl: string;
  accessKey: string;
  secretKey: string;
  ccToken: string;
}

/** Imports the demo catalog (an upsert, so stock is topped up on every start) and makes the demo client once. */
export async function seedDemo(store: Store, profilePath: string, baseUrl: string): Promise<DemoClient> {
  const catalogFile = JSON.parse(
    fs.readFileSync(path.join(import.meta.dirname, 'demo-catalog.json'), 'utf8'),
  );
  const parsed = await importCatalogFile(store.catalog, catalogFile);
  if (!parsed.ok) throw new Error(`demo catalog is invalid:\n  ${parsed.problems.join('\n  ')}`);

  const { clients } = store;
  const existing = readProfile(profilePath);
  if (
    existing &&
    (await clients.findByAccessKey(existing.accessKey)) &&
    (await clients.findCard(existing.ccToken))
  ) {
    return { ...existing, baseUrl };
  }
  const client = await createClient(clients, 'demo client', Date.now());
  const card = await addCard(clients, client.clientId, false, Date.now());
  const demo = { baseUrl, accessKey: client.accessKey, secretKey: client.secretKey, ccToken: card.token };
  fs.mkdirSync(path.dirname(profilePath), { recursive: true });
  fs.writeFileSync(profilePath, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  return demo;
}

function readProfile(profilePath: string): DemoClient | null {
  try {
    return JSON.parse(fs.readFileSync(profilePath, 'utf8')) as DemoClient;
  } catch {
    return null;
  }
}

/**
 * The demo's order bodies, written next to the profile so the printed commands work as they are: a dry run
 * (`demo-dryrun.json`) and the same order for real (`demo-order.json`). Returns both paths.
 */
export function writeDemoOrders(
  dir: string,
  ccToken: string,
  listingId: number,
): { dryRun: string; order: string } {
  const address = {
    name: 'Ada Reader',
    address1: '1 Market St',
    city: 'San Francisco',
    provstate: 'CA',
    country: 'USA',
    zipcode: '94105',
    phone: '+1 415 555 0100',
  };
  const body = {
    shipAddr: address,
    billAddr: address,
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
    fs.writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
    fs.chmodSync(file, 0o600);
  }
  return { dryRun, order };
}
