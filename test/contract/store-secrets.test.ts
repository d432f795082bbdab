// Secrets at rest, on the store of the vitest project: what a copy of the database reveals (neither a secret key
// nor a card token), the files SQLite leaves on disk, the migration of clear rows, and rotating SECRETS_KEY.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { parseSecretsKey } from '../../src/config/secrets-key-format.js';
import { createSealer } from '../../src/domain/secrets.js';
import { addCard, createClient, rollClientSecret } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/postgres.migrations.js';
import { secretsKeyFile } from '../../src/store/secrets/secrets-key.js';
import { MIGRATIONS } from '../../src/store/sqlite/sqlite.migrations.js';
import type { Store } from '../../src/store/port/store.port.js';
import { openProbe, TEST_STORE, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

let dir: string;
let testStores: TestStoreEnv[];
const opened: Store[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-secrets-'));
  testStores = [];
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  await Promise.all(testStores.map((store) => store.drop()));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The environment of a fresh store; on SQLite in a data folder the service creates itself. */
async function freshEnv(): Promise<Record<string, string>> {
  const testStore = await testStoreEnv(dir);
  testStores.push(testStore);
  return { ...testStore.env, DB_PATH: path.join(dir, `data-${testStores.length}`, 'orders.db') };
}

async function open(env: Record<string, string>, notes: string[] = []): Promise<Store> {
  const store = await openStore(loadConfig(env), 'test', (note) => notes.push(note));
  opened.push(store);
  return store;
}

/** Every value of every row of the tables that hold secrets, as one string. */
async function everything(env: Record<string, string>): Promise<string> {
  const probe = openProbe(env);
  try {
    const tables = ['clients', 'cards', 'store_secrets'];
    const rows = await Promise.all(tables.map((table) => probe.all(`SELECT * FROM ${table}`)));
    return JSON.stringify(rows);
  } finally {
    await probe.close();
  }
}

/** The SECRETS_KEY the store was opened with: the environment's, or the generated file's on SQLite. */
function keyOf(env: Record<string, string>): Buffer {
  return parseSecretsKey(env.SECRETS_KEY ?? fs.readFileSync(secretsKeyFile(env.DB_PATH!), 'utf8'));
}

describe(`secrets at rest on ${TEST_STORE}`, () => {
  it('when a client and a card are stored, then no column holds the secret key or the token, and the port gives both back', async () => {
    const env = await freshEnv();
    const store = await open(env);
    const client = await createClient(store.clients, 'Acme', Date.now());
    const { token, ...card } = await addCard(store.clients, client.clientId, false, Date.now());

    const stored = await everything(env);
    for (const secret of [client.secretKey, token]) {
      expect(stored).not.toContain(secret);
      expect(stored).not.toContain(secret.slice(3));
    }
    expect(await store.clients.findByAccessKey(client.accessKey)).toEqual(client);
    expect(await store.clients.findCard(token)).toEqual(card);
  });

  it('when a store of the previous version holds clear keys and tokens, then the migration seals and hashes them and both still work', async () => {
    const env = await freshEnv();
    fs.mkdirSync(path.dirname(env.DB_PATH!), { recursive: true });
    const probe = openProbe(env);
    const previous = TEST_STORE === 'sqlite' ? MIGRATIONS.slice(0, 4) : POSTGRES_MIGRATIONS.slice(0, 2);
    await probe.exec(`CREATE TABLE schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    for (const m of previous) {
      await probe.exec(m.sql!);
      await probe.exec(`INSERT INTO schema_migrations VALUES (${m.version}, 'before secrets', 0)`);
    }
    await probe.exec(`INSERT INTO clients (client_id, name, access_key, secret_key, created_at)
                        VALUES (1, 'Old', 'AKOLD', 'sk_old_secret_0123456789', 0);
                      INSERT INTO cards (card_id, client_id, token, created_at) VALUES (1, 1, 'cc_old_token_0123', 0);`);
    await probe.close();

    const store = await open(env);
    expect(await store.clients.findByAccessKey('AKOLD')).toMatchObject({
      secretKey: 'sk_old_secret_0123456789',
    });
    expect(await store.clients.findCard('cc_old_token_0123')).toMatchObject({ cardId: 1, clientId: 1 });
    const stored = await everything(env);
    expect(stored).not.toContain('old_secret');
    expect(stored).not.toContain('old_token');
  });

  it('when SECRETS_KEY is rotated, then every secret is re-sealed: the old key no longer opens the store, the new one does, and cards are still found', async () => {
    const env = await freshEnv();
    const store = await open(env);
    const bystander = await open(env);
    const made = await createClient(store.clients, 'Acme', Date.now());
    // A client whose secret was rolled: the previous secret, still accepted, is re-sealed with the current one.
    const client = (await rollClientSecret(store.clients, made.accessKey, 60_000, Date.now()))!;
    const { token } = await addCard(store.clients, client.clientId, false, Date.now());
    await addCard(store.clients, client.clientId, true, Date.now());
    const oldKey = keyOf(env);
    const sealedBefore = await everything(env);

    const newKey = crypto.randomBytes(32);
    expect(await store.clients.rotateSecrets(createSealer(newKey))).toEqual({ clients: 1, cards: 2 });

    const probe = openProbe(env);
    const row = await probe.get<{ secret_key: string; previous_secret_key: string }>(
      'SELECT secret_key, previous_secret_key FROM clients',
    );
    await probe.close();
    expect(() => createSealer(oldKey).unseal(row!.secret_key, client.accessKey)).toThrow();
    expect(createSealer(newKey).unseal(row!.secret_key, client.accessKey)).toBe(client.secretKey);
    expect(createSealer(newKey).unseal(row!.previous_secret_key, client.accessKey)).toBe(made.secretKey);
    expect(await everything(env)).not.toEqual(sealedBefore);

    // This store follows its own rotation; a process still on the old key reads no secret and seals none.
    expect(await store.clients.findByAccessKey(client.accessKey)).toEqual(client);
    await expect(bystander.clients.findByAccessKey(client.accessKey)).rejects.toThrow(/SECRETS_KEY/);
    await expect(createClient(bystander.clients, 'Late', Date.now())).rejects.toThrow(/SECRETS_KEY/);
    expect(await bystander.clients.findCard(token)).toMatchObject({ clientId: client.clientId });

    const oldEnv = { ...env, SECRETS_KEY: oldKey.toString('hex') };
    await expect(open(oldEnv)).rejects.toThrow(/SECRETS_KEY \(key id [0-9a-f]+\) does not open/);
    const restarted = await open({ ...env, SECRETS_KEY: newKey.toString('base64') });
    expect(await restarted.clients.findByAccessKey(client.accessKey)).toEqual(client);
    expect(await restarted.clients.findCard(token)).toMatchObject({ clientId: client.clientId });
  });

  it('when processes hold SECRETS_KEY_PREVIOUS, then they serve a store still under it, and the re-seal moves every secret to SECRETS_KEY in batches', async () => {
    const env = await freshEnv();
    const store = await open(env);
    const clients = [];
    for (const name of ['A', 'B', 'C']) clients.push(await createClient(store.clients, name, Date.now()));
    clients[2] = (await rollClientSecret(store.clients, clients[2]!.accessKey, 60_000, Date.now()))!;
    const { token } = await addCard(store.clients, clients[0]!.clientId, false, Date.now());
    const oldKey = keyOf(env);
    const newKey = crypto.randomBytes(32);
    const rotatingEnv = {
      ...env,
      SECRETS_KEY: newKey.toString('hex'),
      SECRETS_KEY_PREVIOUS: oldKey.toString('hex'),
    };
    const newOnly = { ...env, SECRETS_KEY: newKey.toString('hex') };
    await expect(open(newOnly)).rejects.toThrow(/does not open this store's secrets/);

    const rotating = await open(rotatingEnv);
    expect(await rotating.clients.findByAccessKey(clients[1]!.accessKey)).toEqual(clients[1]);
    expect(await rotating.clients.findCard(token)).toMatchObject({ clientId: clients[0]!.clientId });
    // Sealed under the new key while the old-key process still serves the others.
    const late = await createClient(rotating.clients, 'Late', Date.now());
    await expect(rotating.ping()).resolves.toBeUndefined();
    await expect(store.ping()).resolves.toBeUndefined();

    expect(await rotating.clients.resealSecrets(2)).toEqual({ clients: 3, cards: 1 });
    expect(await rotating.clients.resealSecrets(2)).toEqual({ clients: 0, cards: 1 });
    await expect(store.ping()).rejects.toThrow(/SECRETS_KEY/);
    await expect(open({ ...env, SECRETS_KEY: oldKey.toString('hex') })).rejects.toThrow(/does not open/);

    const restarted = await open(newOnly);
    for (const client of [...clients, late]) {
      expect(await restarted.clients.findByAccessKey(client.accessKey)).toEqual(client);
    }
    expect(await restarted.clients.findCard(token)).toMatchObject({ clientId: clients[0]!.clientId });
  });
});

// Only the embedded store has files and a generated key.
if (TEST_STORE === 'sqlite') {
  describe('the SQLite files', () => {
    const mode = (file: string) => fs.statSync(file).mode & 0o777;

    it('when the service creates its data folder, then the folder is 0700 and the database, its -wal and -shm and secrets.key are 0600', async () => {
      const env = await freshEnv();
      const notes: string[] = [];
      const store = await open(env, notes);
      await createClient(store.clients, 'Acme', Date.now());

      const dbPath = env.DB_PATH!;
      expect(mode(path.dirname(dbPath))).toBe(0o700);
      for (const file of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, secretsKeyFile(dbPath)]) {
        expect({ file, mode: mode(file).toString(8) }).toEqual({ file, mode: '600' });
      }
      expect(notes).toEqual([
        expect.stringMatching(/^generated SECRETS_KEY into .*secrets\.key \(mode 0600\)/),
      ]);

      // Started again, the service reuses the key and says nothing.
      const again: string[] = [];
      const reopened = await open(env, again);
      expect(again).toEqual([]);
      expect(await reopened.ping()).toBeUndefined();
    });

    it('when files of an older version are 0644, then opening the store narrows them to 0600', async () => {
      const env = await freshEnv();
      const running = await open(env);
      await createClient(running.clients, 'Acme', Date.now());
      const dbPath = env.DB_PATH!;
      const files = [dbPath, `${dbPath}-wal`, `${dbPath}-shm`];
      for (const file of files) fs.chmodSync(file, 0o644);
      await open(env);
      for (const file of files) expect(mode(file)).toBe(0o600);
    });

    it('when DB_PATH is a link to the file, then the -wal and -shm beside the file it points to are narrowed to 0600', async () => {
      const env = await freshEnv();
      const running = await open(env);
      await createClient(running.clients, 'Acme', Date.now());
      const real = env.DB_PATH!;
      const link = path.join(dir, 'linked', 'orders.db');
      fs.mkdirSync(path.dirname(link), { mode: 0o700 });
      fs.symlinkSync(real, link);
      // The key the service generated beside the file, given as the environment's (it looks beside the link).
      const linked = { ...env, DB_PATH: link, SECRETS_KEY: keyOf(env).toString('hex') };
      const reopened = await open(linked);
      await createClient(reopened.clients, 'Bolt', Date.now());
      const files = [real, `${real}-wal`, `${real}-shm`];
      for (const file of files) fs.chmodSync(file, 0o644);
      await open(linked);
      for (const file of files) expect({ file, mode: mode(file).toString(8) }).toEqual({ file, mode: '600' });
    });

    it('when SECRETS_KEY is another key than the file that sealed the store, then the store does not open, naming SECRETS_KEY', async () => {
      const env = await freshEnv();
      await open(env);
      const other = { ...env, SECRETS_KEY: crypto.randomBytes(32).toString('hex') };
      await expect(open(other)).rejects.toThrow(/SECRETS_KEY .* does not open this store's secrets/);
    });
  });
}
