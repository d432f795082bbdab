// The connection arithmetic of docs/operating.md, "How many connections", run: 3 hosts' worth of
// processes (2 web, 2 workers, 1 clock each, plus one admin CLI run: 16 pools of DB_POOL_SIZE 10, the service's
// own pool) all busy at once against a private PostgreSQL started with max_connections = 40, once directly and
// once through a private PgBouncer in transaction mode (max_client_conn 200, default_pool_size 20). Prints how
// many transactions succeeded and which errors came back; the connection count the server saw at most.
//   node --import tsx scripts/bench/pgbouncer-connections.ts [--transactions 40]
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { createPool, withTransaction, type Pooling } from '../../src/store/postgres/postgres.pool.js';
import { startPgBouncer } from '../pgbouncer.js';
import { createDatabase, startPrivatePostgres } from '../postgres.js';
import { postgresProbe } from '../../test/helpers/postgres.probe.js';
import { runBench } from './processes.js';

const { values } = parseArgs({ options: { transactions: { type: 'string', default: '40' } } });
const PER_CONNECTION = Number(values.transactions);
const POOLS = 3 * (2 + 2 + 1) + 1;
const POOL_SIZE = 10;

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Every connection of every pool runs PER_CONNECTION short transactions at once; the errors by message. */
async function load(url: string, pooling: Pooling, serverUrl: string) {
  const pools: pg.Pool[] = Array.from({ length: POOLS }, (_, i) =>
    createPool(url, { poolSize: POOL_SIZE, pooling, applicationName: `process ${i}` }),
  );
  const errors = new Map<string, number>();
  let ok = 0;
  let most = 0;
  const probe = postgresProbe(serverUrl);
  const watching = setInterval(() => {
    void probe
      .scalar<number>("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
      .then((n) => (most = Math.max(most, Number(n))))
      .catch(() => undefined);
  }, 50);
  const started = performance.now();
  await Promise.all(
    pools.flatMap((pool) =>
      Array.from({ length: POOL_SIZE }, async () => {
        for (let i = 0; i < PER_CONNECTION; i++) {
          try {
            await withTransaction(pool, async (tx) => {
              await tx.query('SELECT pg_sleep(0.002)');
              await tx.query('SELECT $1::int + 1 AS n', [i]);
            });
            ok++;
          } catch (err) {
            const message = (err as Error).message;
            errors.set(message, (errors.get(message) ?? 0) + 1);
          }
        }
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(watching);
  await Promise.all(pools.map((pool) => pool.end()));
  await probe.close();
  return { ok, errors, seconds, most };
}

async function main() {
  const server = await startPrivatePostgres({ settings: ['max_connections=40'] });
  const bouncer = await startPgBouncer(server.url, { maxClientConn: 200, defaultPoolSize: 20 });
  try {
    const direct = await createDatabase(server.url, 'connections');
    const probe = postgresProbe(server.url);
    const max = await probe.scalar<string>('SHOW max_connections');
    await probe.close();
    say(
      `${POOLS} pools × ${POOL_SIZE} connections = ${POOLS * POOL_SIZE} clients, ${PER_CONNECTION} transactions each; server max_connections = ${max}`,
    );
    for (const [name, url, pooling] of [
      ['direct', direct, 'direct'],
      ['PgBouncer, transaction mode', bouncer.databaseUrl('connections'), 'transaction'],
    ] as const) {
      const { ok, errors, seconds, most } = await load(url, pooling, server.url);
      const total = POOLS * POOL_SIZE * PER_CONNECTION;
      say(
        `${name}: ${ok} of ${total} transactions committed in ${seconds.toFixed(1)} s, at most ${most} client connections on the server (a watcher's own included, when it found a free slot)`,
      );
      for (const [message, n] of errors) say(`  ${n} × ${message}`);
    }
  } finally {
    await bouncer.stop();
    await server.stop();
  }
}

runBench(main);
