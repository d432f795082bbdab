// The operator's side of SECRETS_KEY: rotating it with the admin CLI, and a bad key stopping every process at
// start. Each case runs the real entry files, as an operator would, on a private store of the vitest project.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import type { Deps } from '../../src/deps.js';
import { readinessCheck } from '../../src/http/app.js';
import { openStore } from '../../src/store/open-store.js';
import { secretsKeyFile } from '../../src/store/secrets/secrets-key.js';
import { TEST_STORE, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';
import { collect, type CliRun } from '../helpers/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

let dir: string;
let store: TestStoreEnv;

/** Runs an entry file (the admin CLI by default) with only PATH and `env`, and waits for it to exit. */
function run(args: string[], env: Record<string, string>, entry = 'src/cli/admin.cli.ts'): Promise<CliRun> {
  return collect(spawn(TSX, [entry, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, ...env } }));
}

function keyFile(name: string, content: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content, { mode: 0o600 });
  return file;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-rotate-'));
  store = await testStoreEnv(dir);
});

afterAll(async () => {
  await store.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('when an operator rotates SECRETS_KEY', () => {
  it('then every secret key is re-sealed under the new key, processes on it find clients and cards, and the old key opens nothing', async () => {
    const client = JSON.parse((await run(['client:create', '--name', 'Acme'], store.env)).stdout);
    const card = await run(['card:add', '--access-key', client.accessKey], store.env);
    const { ccToken } = JSON.parse(card.stdout);
    const newKey = crypto.randomBytes(32).toString('hex');
    const file = keyFile('new.key', `${newKey}\n`);
    const oldKey =
      store.env.SECRETS_KEY ?? fs.readFileSync(secretsKeyFile(store.env.DB_PATH!), 'utf8').trim();

    // A process on the old key, open before the rotation: ready until then, not ready (key mismatch) after.
    const left = await openStore(loadConfig(store.env), 'test', () => undefined);
    await expect(left.ping()).resolves.toBeUndefined();
    const rotated = await run(['secrets:rotate', '--new-key-file', file], store.env);
    expect(rotated).toMatchObject({ code: 0 });
    await expect(left.ping()).rejects.toThrow(/does not open this store's secrets/);
    // Its /readyz blames the key it holds, not the store, which answers.
    const redis = { ping: async () => 'PONG' } as unknown as Deps['redis'];
    expect(await readinessCheck({ store: left, redis })()).toEqual(['secrets-key']);
    await left.close();
    expect(JSON.parse(rotated.stdout)).toEqual({ clients: 1, cards: 1 });

    let newEnv: Record<string, string>;
    if (TEST_STORE === 'sqlite') {
      // The embedded default: the data folder's key file now holds the new key, so a restart picks it up.
      expect(rotated.stderr).toMatch(/secrets\.key now holds the new key: restart web, worker and clock/);
      expect(fs.readFileSync(secretsKeyFile(store.env.DB_PATH!), 'utf8').trim()).toBe(newKey);
      newEnv = store.env;
    } else {
      expect(rotated.stderr).toMatch(/restart every process .* with SECRETS_KEY set to the new key/);
      newEnv = { ...store.env, SECRETS_KEY: newKey };
    }
    const late = await run(['client:create', '--name', 'Late'], { ...store.env, SECRETS_KEY: oldKey });
    expect(late).toMatchObject({ code: 1, stdout: '' });
    expect(late.stderr).toMatch(/SECRETS_KEY \(key id [0-9a-f]+\) does not open this store's secrets/);

    const restarted = await openStore(loadConfig(newEnv), 'test', () => undefined);
    try {
      expect(await restarted.clients.findByAccessKey(client.accessKey)).toMatchObject({
        secretKey: client.secretKey,
      });
      expect(await restarted.clients.findCard(ccToken)).toMatchObject({ clientId: client.clientId });
    } finally {
      await restarted.close();
    }

    const again = await run(['secrets:rotate', '--new-key-file', file], newEnv);
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(again.stderr).toMatch(/holds the current SECRETS_KEY/);
  });

  it('then a key file that holds no key, or is missing, is refused with exit code 1 naming the file', async () => {
    const bad = keyFile('bad.key', 'not a key\n');
    const refused = await run(['secrets:rotate', '--new-key-file', bad], store.env);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toContain(`${bad}: must be 32 bytes as 64 hex characters or base64`);
    const missing = await run(['secrets:rotate', '--new-key-file', path.join(dir, 'none.key')], store.env);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toMatch(/none\.key: ENOENT/);
    expect(await run(['secrets:rotate'], store.env)).toMatchObject({ code: 2 });
  });
});

describe('when SECRETS_KEY is not a 32-byte key', () => {
  it('then the web process and the admin CLI stop at start, naming the variable', async () => {
    const env = { DB_PATH: path.join(dir, 'bad', 'orders.db'), SECRETS_KEY: 'too-short' };
    const [web, admin] = await Promise.all([
      run([], env, 'src/server.ts'),
      run(['client:create', '--name', 'x'], env),
    ]);
    for (const started of [web, admin]) {
      expect(started.code).toBe(1);
      expect(started.stderr).toMatch(/SECRETS_KEY: must be 32 bytes as 64 hex characters or base64/);
      expect(started.stderr).not.toContain('too-short');
    }
    expect(fs.existsSync(env.DB_PATH)).toBe(false);
  });
});
