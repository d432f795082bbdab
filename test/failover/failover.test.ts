// A server lost for good under load from several callers, and its replacement promoted:
// (a) Redis behind three Sentinels loses its primary (SIGKILL): every process follows the promoted replica;
// (b) PostgreSQL loses its primary (`pg_ctl stop -m immediate`) and its synchronous standby is promoted: DATABASE_URL
//     names both hosts with target_session_attrs=read-write, and every process finds the new primary by itself.
// In each: no process (web, worker, clock) exits, nothing is answered a 5xx but 503 5030, orders are accepted again
// within 15 s, each request retried with its Svc-RequestId got one order, every accepted order ends final (one whose
// job the Redis failover lost is enqueued again by reconciliation: the store is the truth), none FAILED, stock and
// payments exact. /readyz, each process's failover counter and its logs (once) name the new server.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startPostgresPair, startRedisSentinels } from '../../scripts/failover-servers.js';
import { createDatabase } from '../../scripts/postgres.js';
import { freePort } from '../../scripts/redis.js';
import type { Link } from '../../src/server-changes.js';
import { expectNothingLost, MAX_PROCESS_ATTEMPTS, runThroughFailover } from '../helpers/failover-load.js';
import { parseSamples } from '../helpers/prometheus-text.js';
import { openProbe } from '../helpers/test-store.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** The settings every process gets besides the store and Redis, with a directory of the test's own. */
function baseEnv(): Record<string, string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-failover-'));
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return {
    QUEUE_PREFIX: `f${crypto.randomBytes(5).toString('hex')}`,
    DB_PATH: path.join(dir, 'orders.db'),
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    RECONCILE_CRON: '*/2 * * * * *',
    // A job the failover lost is found by reconciliation after this long.
    QUEUED_STALE_AFTER_S: '5',
    MAX_PROCESS_ATTEMPTS: String(MAX_PROCESS_ATTEMPTS),
  };
}

/**
 * Loses the server (`lose`) under load, checks that nothing is lost, and that what the operator sees names
 * `server()`, the new one: /readyz on the metrics port, each of the three processes' counter (one change), each one's log (once).
 */
async function failOver(
  env: Record<string, string>,
  link: Link,
  lose: () => Promise<void>,
  server: () => Promise<string>,
) {
  const probe = openProbe(env);
  cleanups.push(() => probe.close());
  let ready: unknown;
  const run = await runThroughFailover({
    env,
    port: await freePort(),
    probe,
    lose,
    atEnd: async (urls) => {
      // Each process's counter (from its heartbeat, every few seconds) says one change.
      const changes = async () =>
        parseSamples(await (await fetch(urls.metrics)).text())
          .filter((s) => s.name === 'bookorders_process_server_changes_total' && s.labels.link === link)
          .map((s) => s.value);
      await expect.poll(changes, { timeout: 30_000 }).toEqual([1, 1, 1]);
      // The operators' readiness, on the metrics port: the API port's names no server.
      ready = await (await fetch(urls.metrics.replace(/\/metrics$/, '/readyz'))).json();
    },
  });
  await expectNothingLost(probe, run);
  const now = await server();
  expect(ready).toMatchObject({ status: 'ready', servers: { [link]: { server: now, changes: 1 } } });
  for (const lines of run.logs) {
    const said = lines.filter((line) => line.includes(`${link} server is now ${now}`));
    expect(said.length, run.tails()).toBe(1);
  }
}

describe('a server lost for good, and its replacement promoted', () => {
  it('Redis behind Sentinel: every process follows the promoted replica, nothing is lost', async () => {
    const redis = await startRedisSentinels();
    cleanups.push(() => redis.stop());
    let lost = '';
    const env = { ...baseEnv(), REDIS_SENTINELS: redis.sentinels, REDIS_SENTINEL_MASTER: redis.master };
    await failOver(
      env,
      'redis',
      async () => {
        lost = await redis.killPrimary();
      },
      async () => {
        const primary = await redis.primary();
        expect(primary).not.toBe(lost);
        return primary;
      },
    );
  }, 240_000);

  it('PostgreSQL with a synchronous standby: every process finds the promoted standby, nothing is lost', async () => {
    const pair = await startPostgresPair();
    cleanups.push(() => pair.stop());
    await createDatabase(pair.primaryUrl, 'failover');
    // The probe takes the same URL: it follows the promoted standby too.
    const env = {
      ...baseEnv(),
      DATABASE_URL: pair.urlOf('failover'),
      SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
      REDIS_URL: inject('redisUrl'),
    };
    await failOver(
      env,
      'postgres',
      async () => {
        await pair.losePrimary();
        await pair.promoteStandby();
      },
      async () => new URL(pair.standbyUrl).host,
    );
  }, 240_000);
});
