// A real worker process of this release started on a store of the release of 2026-11-27: on SQLite it refuses to
// migrate while a process of that release beats; on both stores it refuses to serve until `admin migrate` has run
// the upgrade's steps, then starts. What an operator sees: the exit code and the one line naming what to do.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/cli/commands/migrate.commands.js';
import { keyOf } from '../../src/metrics/process-heartbeat.js';
import { openStore } from '../../src/store/open-store.js';
import { beatOfTheReleaseBefore, toTheReleaseBefore } from '../helpers/release-before.js';
import { connectTestRedis } from '../helpers/test-redis.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { createTestService, type TestService } from '../helpers/test-service.js';
import type { RedisClient } from '../../src/redis/redis.js';

let service: TestService;
let redis: RedisClient;

beforeAll(async () => {
  service = await createTestService();
  redis = await connectTestRedis('releases-side-by-side');
});

afterAll(async () => {
  redis?.disconnect();
  await service?.close({ checkMoney: false });
});

/** Runs a worker until it exits, within the bound a start takes; its exit code and everything it printed. */
async function workerExit(): Promise<{ code: number | null; output: string }> {
  const child: ChildProcess = await service.spawn('workers/order.worker.ts', { LOG_LEVEL: 'info' });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}

describe(`a process of this release on a store of the release of 2026-11-27 (${TEST_STORE})`, () => {
  it('refuses what would break a live process of that release, serves only once admin migrate is done', async () => {
    const { clientId } = await service.client();
    expect(clientId).toBeGreaterThan(0);
    await service.probe.exec(
      `INSERT INTO orders (client_id, request_id, request_hash, domain, currency, shipping_mode, ship_addr,
         bill_addr, card_id, created_at)
       SELECT ${clientId}, 'r1', 'h1', 'bookmarket.com', 'USD', 'S', '{}', '{}', card_id, 1 FROM cards LIMIT 1`,
    );
    await toTheReleaseBefore(service.probe);
    await beatOfTheReleaseBefore(redis, service.config.REDIS_PREFIX, 'web:4242');

    if (TEST_STORE === 'sqlite') {
      const refused = await workerExit();
      expect(refused.code).toBe(1);
      expect(refused.output).toMatch(
        /not migrating: migration 14 \([^)]*\), migration 15 \([^)]*\) would break 1 process\(es\) of an earlier release still running: web:4242\. Stop the processes of the previous release first/,
      );
      expect(await service.probe.scalar('SELECT max(version) FROM schema_migrations')).toBe(13);
      // That release's processes stopped: their beats go (or age past 15 s).
      await redis.hdel(keyOf(service.config.REDIS_PREFIX), 'web:4242');
    }

    // The schema part is applied; the fill of items_updated_at is left to admin migrate.
    const waiting = await workerExit();
    expect(waiting.code).toBe(1);
    expect(waiting.output).toContain("the store's upgrade is not finished: migration");
    expect(waiting.output).toContain('admin -- migrate');
    // On PostgreSQL the live process of that release did not stop the migrations: it runs beside them.
    expect(waiting.output).not.toContain('not migrating');

    const admin = await openStore(service.config, 'admin', () => undefined);
    try {
      const printed = await migrate.run([], {
        config: service.config,
        store: () => Promise.resolve(admin),
        out: { note: () => undefined },
      });
      expect(printed).toMatchObject({ remaining: [] });
    } finally {
      await admin.close();
    }
    const worker = await service.spawn('workers/order.worker.ts', {}, 'worker ready');
    expect(worker.exitCode).toBeNull();
  }, 120_000);
});
