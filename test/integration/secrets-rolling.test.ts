// Rotating SECRETS_KEY with no downtime (docs/api.md#operations): web processes on the old key and on the new one
// (with SECRETS_KEY_PREVIOUS) serve side by side under signed traffic, `secrets:rotate` re-seals in batches
// while they serve, and the old key is then retired, with no request failing at any step.
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigningClient } from '../helpers/signed-client.js';
import { secretsKeyFile } from '../../src/store/secrets/secrets-key.js';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { freePort } from '../../scripts/redis.js';
import { runAdmin } from '../helpers/wait.js';
import { createTestService, stopChild, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let buyers: Credentials[];

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyers = [await service.client('rolling one'), await service.client('rolling two')];
});
afterAll(() => service.close());

/** Signed dry runs from every buyer, spread over the web processes a load balancer would send them to. */
function trafficOver(live: Set<number>) {
  const answers: { port: number; status: number[] | string }[] = [];
  const pending = new Map<number, Set<Promise<unknown>>>();
  let stopped = false;
  const loop = async (buyer: Credentials) => {
    for (let i = 0; !stopped; i++) {
      const ports = [...live];
      const port = ports[i % ports.length];
      if (port === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const client = createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...buyer });
      const request = client.request('POST', '/v1/orders', orderBody(buyer.ccToken, { dryrun: true }));
      const inFlight = pending.get(port) ?? new Set();
      pending.set(port, inFlight.add(request));
      // A request that gets no answer is a failure the test reports, not an error of the loop.
      const status = await request.then(
        (res) => res.svcStatus,
        (err: Error) => `no answer: ${err.message}`,
      );
      inFlight.delete(request);
      answers.push({ port, status });
    }
  };
  const loops = Promise.all(buyers.map(loop));
  return {
    answers,
    /** Takes a process out of rotation, as a load balancer does before it is stopped, and waits for its answers. */
    async drain(port: number) {
      live.delete(port);
      await Promise.all(pending.get(port) ?? []);
    },
    async servedBy(port: number, count: number) {
      await expect
        .poll(() => answers.filter((a) => a.port === port).length, { timeout: 120_000 })
        .toBeGreaterThanOrEqual(count);
    },
    async stop() {
      stopped = true;
      await loops;
    },
  };
}

describe('when SECRETS_KEY is rotated by a rolling restart', () => {
  // Eight process starts and two CLI runs take minutes on a busy machine, whose pace says nothing of the outcome.
  it('then old-key and new-key processes serve together, the re-seal runs under traffic, and no request fails', async () => {
    const env: Record<string, string> = service.env;
    const oldKey = env.SECRETS_KEY ?? fs.readFileSync(secretsKeyFile(env.DB_PATH!), 'utf8').trim();
    const newKey = crypto.randomBytes(32).toString('hex');
    const onOld = { SECRETS_KEY: oldKey };
    const during = { SECRETS_KEY: newKey, SECRETS_KEY_PREVIOUS: oldKey };
    const onNew = { SECRETS_KEY: newKey };
    const webs = new Map<number, ChildProcess>();
    const live = new Set<number>();
    const traffic = trafficOver(live);
    const startWeb = async (keys: Record<string, string>) => {
      const port = await freePort();
      webs.set(port, await service.spawn('src/server.ts', { PORT: String(port), ...keys }, 'web listening'));
      live.add(port);
      await traffic.servedBy(port, 5);
      return port;
    };
    const replace = async (port: number, keys: Record<string, string>) => {
      await traffic.drain(port);
      await stopChild(webs.get(port)!);
      return startWeb(keys);
    };
    try {
      const [a1, a2] = [await startWeb(onOld), await startWeb(onOld)];
      // A process on the new key alone cannot open the store before the re-seal: it refuses to start.
      await expect(
        service.spawn('src/server.ts', { PORT: String(await freePort()), ...onNew }, 'web listening'),
      ).rejects.toThrow(/SECRETS_KEY \(key id [0-9a-f]+\) does not open this store's secrets/);

      // Step 1: every process restarted, one at a time, on the new key with the old one as previous.
      const b1 = await replace(a1!, during);
      await traffic.servedBy(a2!, 5);
      const b2 = await replace(a2!, during);

      // Step 2: the re-seal, in batches of one client, while both serve.
      const before = traffic.answers.length;
      const rotated = await runAdmin({ ...service.env, ...during }, ['secrets:rotate', '--batch-size', '1']);
      expect(rotated).toMatchObject({ code: 0 });
      expect(JSON.parse(rotated.stdout)).toEqual({ clients: buyers.length, cards: buyers.length });
      expect(rotated.stderr).toMatch(/restart every process without SECRETS_KEY_PREVIOUS/);
      await traffic.servedBy(b1, 10);
      await traffic.servedBy(b2, 10);
      expect(traffic.answers.length).toBeGreaterThan(before);
      const again = await runAdmin({ ...service.env, ...during }, ['secrets:rotate']);
      expect(JSON.parse(again.stdout)).toEqual({ clients: 0, cards: buyers.length });

      // Step 3: the previous key retired, one process at a time; the old key no longer opens the store.
      await replace(b1, onNew);
      await replace(b2, onNew);
      await expect(
        service.spawn('src/server.ts', { PORT: String(await freePort()), ...onOld }, 'web listening'),
      ).rejects.toThrow(/does not open this store's secrets/);
    } finally {
      await traffic.stop();
    }
    const failed = traffic.answers.filter((a) => String(a.status) !== '2002');
    expect(failed).toEqual([]);
    expect(new Set(traffic.answers.map((a) => a.port)).size).toBe(6);
  }, 300_000);
});
