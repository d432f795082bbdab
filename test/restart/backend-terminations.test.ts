// No PostgreSQL event ends a process: every backend of the service is terminated (pg_terminate_backend, as an
// operator, a failover tool or the server's idle timeouts do) at random moments, hundreds of times, while real
// web, worker and clock processes serve steady load; on a direct connection and behind PgBouncer in transaction
// mode, with DATABASE_URL naming one host and naming two (a dead one first, so that every new connection looks for
// its host again). No process exits, the web answers 200 or 503 5030 only, every accepted order is stored once (the
// one its caller was given) and settled, stock and the ledger are exact, and orders are accepted again within
// seconds of the last termination. Each variant starts its own PostgreSQL (and PgBouncer).
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startPgBouncer } from '../../scripts/pgbouncer.js';
import { createDatabase, startPrivatePostgres } from '../../scripts/postgres.js';
import { freePort } from '../../scripts/redis.js';
import {
  allSettled,
  loadedServiceEnv,
  PLENTY,
  SCARCE,
  seedCallers,
  startLoad,
  startService,
  storeFindings,
} from '../helpers/failover-load.js';
import { stopChild } from '../helpers/test-service.js';
import { openProbe } from '../helpers/test-store.js';
import { sleep, until } from '../helpers/wait.js';

/** How long backends are terminated for, and the longest pause between two rounds (random, from 0). */
const TERMINATING_MS = 25_000;
const MAX_PAUSE_MS = 120;
/** "Within seconds": an order sent after the last termination is accepted within this (a busy machine's bound). */
const SERVED_AGAIN_MS = 15_000;

type Phase = 'terminating' | 'after';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/**
 * Terminates every backend of database `name` but its own, again and again after a random pause, until stopped;
 * how many rounds ran and how many backends they ended.
 */
function terminateRepeatedly(serverUrl: string, name: string) {
  let running = true;
  let rounds = 0;
  let ended = 0;
  const client = new pg.Client({ connectionString: serverUrl });
  client.on('error', () => undefined);
  const done = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ ended: string }>(
        `SELECT count(pg_terminate_backend(pid)) AS ended FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
        [name],
      );
      rounds += 1;
      ended += Number(rows[0]?.ended ?? 0);
      await sleep(Math.random() * MAX_PAUSE_MS);
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { rounds, ended };
    },
  };
}

const VARIANTS = [
  { via: 'direct', hosts: 1 },
  { via: 'pgbouncer', hosts: 1 },
  { via: 'direct', hosts: 2 },
  { via: 'pgbouncer', hosts: 2 },
] as const;

describe.each(VARIANTS)(
  'backends terminated at random under load ($via, $hosts host(s))',
  ({ via, hosts }) => {
    it('no process exits, nothing accepted is lost or doubled, and orders are accepted again within seconds', async () => {
      const server = await startPrivatePostgres();
      cleanups.push(() => server.stop());
      const bouncer = via === 'pgbouncer' ? await startPgBouncer(server.url) : undefined;
      if (bouncer) cleanups.push(() => bouncer.stop());
      const direct = await createDatabase(server.url, 'terminated');
      const reach = new URL(bouncer ? bouncer.databaseUrl('terminated') : direct);
      // A port nobody listens on, named first: every connection that looks for its host is refused there first.
      const url =
        hosts === 1
          ? reach.toString()
          : `postgres://${reach.username}@127.0.0.1:${await freePort()},${reach.host}${reach.pathname}?target_session_attrs=read-write`;
      const port = await freePort();
      const env: Record<string, string> = {
        ...loadedServiceEnv(cleanups),
        DATABASE_URL: url,
        DATABASE_POOLING: bouncer ? 'transaction' : 'direct',
        // The LISTEN session's connection is terminated too.
        ...(bouncer ? { DATABASE_DIRECT_URL: direct } : {}),
        // An attempt cut off by a termination is tried again: hundreds of them must not use up an order's attempts.
        MAX_PROCESS_ATTEMPTS: '50',
      };
      const baseUrl = `http://127.0.0.1:${port}`;
      const callers = await seedCallers(env, baseUrl);

      const processes = new Set<ChildProcess>();
      cleanups.push(() => Promise.all([...processes].map((child) => stopChild(child, 'SIGKILL'))));
      const { all, tails } = await startService(processes, env, port);
      const exited: string[] = [];
      for (const [i, child] of all.entries())
        child.once('exit', (code, signal) =>
          exited.push(`${['web', 'worker', 'clock'][i]}: ${code ?? signal}`),
        );
      const stillRunning = () => expect(exited, tails()).toEqual([]);

      let phase: Phase = 'terminating';
      const load = startLoad(callers, () => phase);
      const terminator = terminateRepeatedly(server.url, 'terminated');
      const terminatingUntil = Date.now() + TERMINATING_MS;
      while (Date.now() < terminatingUntil && exited.length === 0) await sleep(500);
      const { rounds, ended } = await terminator.stop();
      stillRunning();
      phase = 'after';
      const stoppedAt = Date.now();
      const acceptedAfter = () =>
        load.answers.some((a) => a.at === 'after' && a.status === 200 && a.what.endsWith('order'));
      await until(
        () => acceptedAfter() || exited.length > 0,
        SERVED_AGAIN_MS,
        'an order accepted again',
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the processes printed:\n${tails()}`);
      });
      stillRunning();
      const servedAgainMs = Date.now() - stoppedAt;
      await load.stop();

      // Hundreds of terminations, which ended connections of the service's.
      expect(rounds).toBeGreaterThanOrEqual(100);
      expect(ended).toBeGreaterThanOrEqual(100);
      expect(servedAgainMs).toBeLessThanOrEqual(SERVED_AGAIN_MS);
      // Served meanwhile too: orders were accepted between terminations.
      expect(
        load.answers.some((a) => a.at === 'terminating' && a.status === 200 && a.what.endsWith('order')),
      ).toBe(true);
      // Answered 200, or 503 5030 when a termination cut the request's statement off; never a 500, never dropped.
      expect(
        load.answers.filter((a) => a.status >= 500 && (a.status !== 503 || !a.svcStatus.includes(5030))),
      ).toEqual([]);
      expect(load.answers.filter((a) => a.status >= 400 && a.status < 500)).toEqual([]);
      expect(load.networkErrors).toEqual([]);

      const probe = openProbe({ DATABASE_URL: direct });
      cleanups.push(() => probe.close());
      await allSettled(probe, 60_000, tails);
      stillRunning();
      const found = await storeFindings(probe, load.accepted);
      expect(found.orders).toEqual(load.accepted);
      expect(found.failedItems).toBe(0);
      expect(found.stock).toEqual([
        { listingId: SCARCE.listingId, total: SCARCE.copies },
        { listingId: PLENTY.listingId, total: PLENTY.copies },
      ]);
      expect(found.unbalanced).toEqual([]);
    }, 240_000);
  },
);
