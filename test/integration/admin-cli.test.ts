import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/port/store.port.js';
import { freePort } from '../../scripts/redis.js';
import { testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';
import { collect, type CliRun } from '../helpers/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const DEMO_CATALOG = path.join(ROOT, 'scripts/demo-catalog.json');

let dir: string;
let store: TestStoreEnv;

/** Runs the operator CLI as an operator would, against this file's own store (SQLite file or PostgreSQL database). */
function admin(args: string[], stdin?: string): Promise<CliRun> {
  const child = spawn(TSX, ['src/cli/admin.cli.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...store.env },
  });
  child.stdin.end(stdin);
  return collect(child);
}

/** Reads the stored state through the store port, with a connection of its own. */
async function inspect<T>(read: (store: Store) => Promise<T>): Promise<T> {
  const opened = await openStore(loadConfig(store.env), 'test');
  try {
    return await read(opened);
  } finally {
    await opened.close();
  }
}

function writeJson(name: string, value: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'admin-cli-'));
  store = await testStoreEnv(dir);
});

afterAll(async () => {
  await store.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('when an operator onboards a client', () => {
  it('then the client gets keys, sandbox cards, and can be disabled', async () => {
    const created = await admin(['client:create', '--name', 'Acme Books']);
    expect(created.code).toBe(0);
    // The first command on a new SQLite store generates its secrets.key and says so; nothing else is said.
    expect(created.stderr.replace(/^generated SECRETS_KEY into .*\n/, '')).toBe('');
    const client = JSON.parse(created.stdout);
    expect(Object.keys(client)).toEqual(['clientId', 'accessKey', 'secretKey']);
    expect(client.clientId).toBeGreaterThan(0);
    expect(created.stdout.trim().split('\n')).toHaveLength(1);

    const [good, declining] = await Promise.all([
      admin(['card:add', '--access-key', client.accessKey]),
      admin(['card:add', '--access-key', client.accessKey, '--decline']),
    ]);
    expect(good.code).toBe(0);
    expect(declining.code).toBe(0);
    const goodToken = JSON.parse(good.stdout).ccToken;
    const declineToken = JSON.parse(declining.stdout).ccToken;
    await inspect(async ({ clients }) => {
      expect(await clients.findCard(goodToken)).toMatchObject({ clientId: client.clientId, declines: false });
      expect(await clients.findCard(declineToken)).toMatchObject({
        clientId: client.clientId,
        declines: true,
      });
    });

    const disabled = await admin(['client:disable', '--access-key', client.accessKey]);
    expect(disabled.code).toBe(0);
    expect(JSON.parse(disabled.stdout)).toEqual({ accessKey: client.accessKey, disabled: true });
    expect(
      await inspect(async ({ clients }) => (await clients.findByAccessKey(client.accessKey))?.disabled),
    ).toBe(true);

    const cardForDisabled = await admin(['card:add', '--access-key', client.accessKey]);
    expect(cardForDisabled).toMatchObject({ code: 1, stdout: '' });
    expect(cardForDisabled.stderr).toContain('is disabled');
  });

  it('then an unknown access key is refused with exit code 1', async () => {
    const [disable, card] = await Promise.all([
      admin(['client:disable', '--access-key', 'AKnope']),
      admin(['card:add', '--access-key', 'AKnope', '--decline']),
    ]);
    for (const run of [disable, card]) {
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toContain('no client with access key AKnope');
    }
  });
});

describe('when an operator imports the catalog', () => {
  it('then the demo catalog is stored and a later file upserts by id', async () => {
    const imported = await admin(['catalog:import', DEMO_CATALOG]);
    expect(imported).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(imported.stdout)).toEqual({ vendors: 4, listings: 22 });

    // A listings-only file may reference a stored vendor; here stock and price of Middlemarch change.
    const update = {
      listings: [
        {
          listingId: 1001,
          vendorId: 501,
          title: 'Middlemarch',
          isbn: '978-0-14-143954-9',
          price: 11,
          quantity: 9,
        },
      ],
    };
    const updated = await admin(['catalog:import', '-'], JSON.stringify(update));
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toEqual({ vendors: 0, listings: 1 });
    const listing = await inspect(async ({ catalog }) =>
      (await catalog.loadForPricing([1001])).listings.get(1001),
    );
    expect(listing).toMatchObject({ priceCents: 1100, stock: 9, isbn: '9780141439549' });
  });

  it('then a bad file imports nothing and lists every problem', async () => {
    const file = writeJson('bad-catalog.json', {
      vendors: [{ vendorId: 900, name: 'New Vendor', country: 'ITA', currency: 'EUR', shipping: {} }],
      listings: [
        {
          listingId: 9001,
          vendorId: 900,
          title: 'Il Gattopardo',
          isbn: '9788807881145',
          price: 9.5,
          quantity: 2,
        },
        { listingId: 9002, vendorId: 999, title: 'Orphan', isbn: '9788807881145', price: 9.999, quantity: 1 },
      ],
    });
    const run = await admin(['catalog:import', file]);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toContain('2 problems, nothing imported');
    expect(run.stderr).toContain('listings[1].price: must be a positive amount with at most two decimals');
    expect(run.stderr).toContain(
      'listings[1].vendorId: vendor 999 is neither in the file nor in the catalog',
    );
    expect(await inspect(({ catalog }) => catalog.vendorExists(900))).toBe(false);
  });

  it('then a file that is missing or not JSON is refused with exit code 1', async () => {
    const [missing, notJson] = await Promise.all([
      admin(['catalog:import', path.join(dir, 'nope.json')]),
      admin(['catalog:import', writeJson('broken.json', '{"vendors": [')]),
    ]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toContain('cannot read');
    expect(notJson).toMatchObject({ code: 1, stdout: '' });
    expect(notJson.stderr).toContain('is not valid JSON');
  });
});

describe('when an operator deactivates a vendor', () => {
  it('then the vendor is inactive, and an unknown vendor exits 1', async () => {
    await admin(['catalog:import', DEMO_CATALOG]);
    const [done, unknown] = await Promise.all([
      admin(['vendor:deactivate', '--vendor', '301']),
      admin(['vendor:deactivate', '--vendor', '999999']),
    ]);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ vendorId: 301, active: false });
    const vendor = await inspect(async ({ catalog }) =>
      (await catalog.loadForPricing([3001])).vendors.get(301),
    );
    expect(vendor?.active).toBe(false);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toContain('no vendor 999999');
  });
});

describe('when the command line is wrong', () => {
  it('then the CLI prints what is wrong and the usage, and exits 2', async () => {
    const cases: [string[], string][] = [
      [[], 'usage:'],
      [['client:frobnicate'], "unknown command 'client:frobnicate'"],
      [['client:create'], 'missing --name'],
      [['client:create', '--name', 'X', '--colour', 'red'], "Unknown option '--colour'"],
      [['card:add', '--access-key'], "Option '--access-key <value>' argument missing"],
      [['vendor:deactivate', '--vendor', 'abc'], '--vendor must be an integer greater than 0'],
      [['catalog:import'], 'missing FILE'],
      [['catalog:import', 'a.json', 'b.json'], "unexpected argument 'b.json'"],
    ];
    const runs = await Promise.all(cases.map(([args]) => admin(args)));
    runs.forEach((run, index) => {
      const [args, message] = cases[index]!;
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(run.stderr).toContain(message);
      expect(run.stderr).toContain('usage:');
    });
  });
});

describe('when the configuration is wrong', () => {
  /** The CLI with exactly these variables, on no store of this file's. */
  function adminWith(env: Record<string, string>, args: string[]): Promise<CliRun> {
    const child = spawn(TSX, ['src/cli/admin.cli.ts', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...env },
    });
    child.stdin.end();
    return collect(child);
  }
  const KEY = 'ab'.repeat(32);

  it('then a database that cannot be reached is named as DATABASE_URL, without its password', async () => {
    const port = await freePort();
    const run = await adminWith(
      { DATABASE_URL: `postgres://books:hunter2@127.0.0.1:${port}/books`, SECRETS_KEY: KEY },
      ['client:create', '--name', 'X'],
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `DATABASE_URL: cannot use database "books" at 127.0.0.1:${port}: connect ECONNREFUSED`,
    );
    expect(run.stderr).not.toContain('hunter2');
  });

  it('then each bad variable is said once, a non-number readably', async () => {
    const run = await adminWith(
      { DATABASE_URL: 'mysql://books@127.0.0.1/books', SECRETS_KEY: KEY, QUEUED_STALE_AFTER_S: 'soon' },
      ['client:create', '--name', 'X'],
    );
    expect(run.code).toBe(1);
    expect(run.stderr.match(/DATABASE_URL:/g)).toHaveLength(1);
    expect(run.stderr).toContain("QUEUED_STALE_AFTER_S: must be a number, got 'soon'");
  });
});

describe('when call is aimed elsewhere than its profile names', () => {
  it('then it says where the signed request goes before sending it', async () => {
    const [named, aimed] = [await freePort(), await freePort()];
    const profile = writeJson('profile.json', {
      baseUrl: `http://127.0.0.1:${named}`,
      accessKey: 'AKprofile',
      secretKey: 'sk_profile',
    });
    const child = spawn(TSX, ['src/cli/call.cli.ts', '--profile', profile, 'GET', '/v1/orders'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, API_URL: `http://127.0.0.1:${aimed}` },
    });
    const run = await collect(child);
    expect(run.stderr).toContain(
      `call: sending to http://127.0.0.1:${aimed} (API_URL), not to http://127.0.0.1:${named} that ${profile} names`,
    );
    // Nothing listens there: the request fails, after the operator was told where it went.
    expect(run.code).toBe(1);
    expect(run.stderr.indexOf('sending to')).toBeLessThan(run.stderr.indexOf('ECONNREFUSED'));
  });
});
