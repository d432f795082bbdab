// The catalog and the callers of a rolling deploy (test/helpers/rolling-deploy.ts), written by the code of the
// release that runs first, so that its own migrations make the schema, as on a deployment that runs it today:
//   node --import tsx test/helpers/release-seed.ts RELEASE_DIR CALLERS
// run in RELEASE_DIR with the service's environment; SEED_CATALOG holds `{vendors, listings}` as the store port
// takes them. Prints `[{accessKey, secretKey, ccToken}]`.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { configFileOf } from './previous-release.js';

const [root = '.', callers = '6'] = process.argv.slice(2);
const load = (file: string) => import(pathToFileURL(path.join(root, file)).href);

const { loadConfig } = await load(configFileOf(root));
const { openStore } = await load('src/store/open-store.ts');
const { createClient, addCard } = await load('src/services/client-keys.ts');

const store = await openStore(loadConfig(process.env), 'seed', () => undefined);
try {
  const { vendors, listings } = JSON.parse(process.env.SEED_CATALOG ?? '{}');
  await store.catalog.importCatalog(vendors, listings);
  const made = [];
  for (let i = 0; i < Number(callers); i += 1) {
    const client = await createClient(store.clients, `caller ${i}`, Date.now());
    const card = await addCard(store.clients, client.clientId, false, Date.now());
    made.push({ accessKey: client.accessKey, secretKey: client.secretKey, ccToken: card.token });
  }
  process.stdout.write(`${JSON.stringify(made)}\n`);
} finally {
  await store.close();
}
