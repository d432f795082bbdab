// A PostgreSQL server restart loses nothing, on a direct connection and behind PgBouncer in transaction mode.
// Under steady load from several callers (real orders, dry runs, gets and searches), the server is restarted
// (`pg_ctl restart -m fast`), then stopped for 20 s (AWAY_MS: longer than a worker's retries of
// one job would last if the outage used up its attempts) and started again. While it is away the web answers
// 503 5030 to what needs the store and /readyz says not ready; no process exits. Once it is back every process
// serves again, every accepted order is final (none FAILED), none twice, stock and the ledger are exact, and each
// caller that retried with the same Svc-RequestId got the same order.
// The test starts its own PostgreSQL (and PgBouncer): it stops them, so never the run's shared server.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startPgBouncer, type RunningPgBouncer } from '../../scripts/pgbouncer.js';
import { createDatabase, startPrivatePostgres, type RunningPostgres } from '../../scripts/postgres.js';
import { freePort } from '../../scripts/redis.js';
import type { Probe } from '../helpers/store.probe.js';
import {
  allSettled,
  loadedServiceEnv,
  MAX_PROCESS_ATTEMPTS,
  PLENTY,
  SCARCE,
  seedCallers,
  startLoad,
  startService,
  storeFindings,
} from '../helpers/failover-load.js';
import { stopChild } from '../helpers/test-service.js';
import { openProbe } from '../helpers/test-store.js';
import { logLines, sleep, until } from '../helpers/wait.js';

const AWAY_MS = 20_000;

type Phase = 'before' | 'restart' | 'away' | 'back';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe.each(['direct', 'pgbouncer'] as const)('a PostgreSQL server restart (%s)', (via) => {
  it('under steady load, a fast restart and then a stop lose nothing, and every process serves again', async () => {
    const server: RunningPostgres = await startPrivatePostgres();
    cleanups.push(() => server.stop());
    let bouncer: RunningPgBouncer | undefined;
    if (via === 'pgbouncer') {
      bouncer = await startPgBouncer(server.url);
      cleanups.push(() => bouncer!.stop());
    }
    const direct = await createDatabase(server.url, 'restart');
    const port = await freePort();
    const env: Record<string, string> = {
      ...loadedServiceEnv(cleanups),
      DATABASE_URL: bouncer ? bouncer.databaseUrl('restart') : direct,
      DATABASE_POOLING: bouncer ? 'transaction' : 'direct',
    };
    const baseUrl = `http://127.0.0.1:${port}`;
    const callers = await seedCallers(env, baseUrl);
    const probe: Probe = openProbe({ DATABASE_URL: direct });
    cleanups.push(() => probe.close());

    const processes = new Set<ChildProcess>();
    cleanups.push(() => Promise.all([...processes].map((child) => stopChild(child, 'SIGKILL'))));
    const { clock, all, tails } = await startService(processes, env, port);
    const clockLog = logLines(clock);

    // The load (failover-load.ts), each answer stamped with the phase it was sent in.
    let phase: Phase = 'before';
    const load = startLoad(callers, () => phase);
    const { answers, accepted, networkErrors } = load;
    const readyz = async () => {
      const response = await fetch(`${baseUrl}/readyz`).catch((err: unknown) => {
        throw new Error(`/readyz: ${(err as Error).message}; the processes printed:\n${tails()}`);
      });
      return response.status;
    };

    await sleep(2_000);
    phase = 'restart';
    await server.control!.restart('fast');
    await sleep(2_000);
    phase = 'away';
    await server.control!.stop('fast');
    const awayReadiness: number[] = [];
    const awayUntil = Date.now() + AWAY_MS;
    while (Date.now() < awayUntil) {
      awayReadiness.push(await readyz());
      await sleep(500);
    }
    phase = 'back';
    const clockLinesAway = clockLog.length;
    await server.control!.start();
    // Orders served again within 10 s of the server's return (it accepts connections once start resolves).
    const returned = Date.now();
    const sentBefore = answers.length;
    await until(
      () => answers.slice(sentBefore).some((a) => a.status === 200 && a.what.endsWith('order')),
      30_000,
      'an order accepted after the return',
    );
    const servedAgainMs = Date.now() - returned;
    console.log(`${via}: orders served again ${servedAgainMs} ms after the server's return`);
    await until(async () => (await readyz()) === 200, 30_000, 'the web ready again');
    await sleep(2_000);
    await load.stop();

    // While the server was away: not ready, and 503 5030 (never a 500) to what needed it.
    expect(awayReadiness.length).toBeGreaterThan(0);
    expect(awayReadiness.every((status) => status === 503)).toBe(true);
    const refused = answers.filter((a) => a.status >= 500);
    expect(refused.filter((a) => a.at === 'away').length).toBeGreaterThan(0);
    expect(refused.filter((a) => a.status !== 503 || !a.svcStatus.includes(5030))).toEqual([]);
    expect(networkErrors).toEqual([]);
    // Every request was answered in the end, and after the return the web served store requests again.
    expect(answers.filter((a) => a.status >= 400 && a.status < 500)).toEqual([]);
    expect(answers.some((a) => a.at === 'back' && a.status === 200 && a.what === 'order')).toBe(true);
    expect(servedAgainMs).toBeLessThanOrEqual(10_000);

    // Every process is still running and serves again: the worker settles every order, the clock passes.
    await allSettled(probe, 60_000, tails);
    await until(
      () => clockLog.slice(clockLinesAway).some((line) => line.msg === 'reconcile pass done'),
      30_000,
      'a reconcile pass after the return',
    );
    expect(
      all.map((child) => child.exitCode ?? child.signalCode),
      tails(),
    ).toEqual([null, null, null]);

    // One order per accepted request, the one its caller was given, however many times it retried; none FAILED
    // because of the outage, none near its last attempt; stock and the ledger exact (failover-load.ts).
    const found = await storeFindings(probe, accepted);
    expect(found.orders).toEqual(accepted);
    expect(found.failedItems).toBe(0);
    expect(found.maxAttempts).toBeLessThan(MAX_PROCESS_ATTEMPTS);
    expect(found.stock).toEqual([
      { listingId: SCARCE.listingId, total: SCARCE.copies },
      { listingId: PLENTY.listingId, total: PLENTY.copies },
    ]);
    // Asked for more often than it had copies (however slow the machine), it sold out exactly.
    const scarceAsked = answers.filter((a) => a.what === 'scarce order' && a.status === 200).length;
    if (scarceAsked > SCARCE.copies) expect(found.scarceLeft).toBe(0);
    expect(found.unbalanced).toEqual([]);
  }, 240_000);
});
