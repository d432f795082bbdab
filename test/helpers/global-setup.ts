// Vitest global setup, run once per `vitest run` (it is configured on the root config only, not on the
// projects): one Redis for the whole run (REDIS_URL, else a private redis-server; each test file then works
// under its own queue prefix) and one PostgreSQL server (DATABASE_URL, else a private server; each test service
// then creates its own database on it, see test-store.ts). PostgreSQL is only started when the run includes the
// "postgres" or the "pgbouncer" project; the latter also gets a private PgBouncer in transaction mode in front
// of that server (test services on it connect through the pooler, DATABASE_POOLING=transaction).
import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startPgBouncer, type RunningPgBouncer } from '../../scripts/pgbouncer.js';
import { ensurePostgres, type RunningPostgres } from '../../scripts/postgres.js';
import { ensureRedis, type RunningRedis } from '../../scripts/redis.js';
import { ensureFaketime } from './faketime.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** The PostgreSQL server URL; empty when the run has no "postgres" or "pgbouncer" project. */
    postgresUrl: string;
    /** The URL of a PgBouncer in transaction mode in front of that server; empty without a "pgbouncer" project. */
    pgbouncerUrl: string;
  }
}

/**
 * scripts/test.sh sets TEST_STATE_DIR: what is recorded there (a private redis-server's pid, a private
 * PostgreSQL's data directory) is stopped and removed by the script should this process die before teardown.
 */
function record(name: string, value: string | undefined): void {
  const dir = process.env.TEST_STATE_DIR;
  if (!dir || !value) return;
  fs.writeFileSync(path.join(dir, name), `${value}\n`);
}

/** A process's working directory (a private redis-server runs in its data directory); Linux only. */
function workingDir(pid: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

function forget(name: string): void {
  const dir = process.env.TEST_STATE_DIR;
  if (dir) fs.rmSync(path.join(dir, name), { force: true });
}

export default async function setup(project: TestProject) {
  const names = new Set(project.vitest.projects.map((p) => p.name));
  const wantPgBouncer = names.has('pgbouncer');
  // The clock-skew tests run a process under libfaketime.
  if (names.has('sqlite') || names.has('postgres')) ensureFaketime();
  const [redis, postgres] = await Promise.allSettled([
    ensureRedis(),
    names.has('postgres') || wantPgBouncer ? ensurePostgres() : Promise.resolve(null),
  ]);
  const started = {
    redis: redis.status === 'fulfilled' ? redis.value : null,
    postgres: postgres.status === 'fulfilled' ? postgres.value : null,
    pgbouncer: null as RunningPgBouncer | null,
  };
  const redisPid = started.redis?.process?.pid;
  const redisDir = redisPid ? workingDir(redisPid) : undefined;
  const teardown = async () => {
    await stopPgBouncer(started.pgbouncer);
    await Promise.all([stopRedis(started.redis, redisDir), stopPostgres(started.postgres)]);
  };
  if (redis.status === 'rejected' || postgres.status === 'rejected') {
    await teardown();
    throw redis.status === 'rejected' ? redis.reason : (postgres as PromiseRejectedResult).reason;
  }
  record('redis.pid', redisPid?.toString());
  record('redis.dir', redisDir);
  record('postgres.dir', started.postgres?.dataDir);
  if (wantPgBouncer) {
    try {
      // Test services open many connections at once (PgBouncer's default max_client_conn is 100).
      started.pgbouncer = await startPgBouncer(started.postgres!.url, { maxClientConn: 2000 });
    } catch (err) {
      await teardown();
      throw err;
    }
    record('pgbouncer.dir', started.pgbouncer.dir);
  }
  // Tests get their databases from test-store.ts; a DATABASE_URL inherited by the test workers (and the worker
  // processes they spawn) would silently turn SQLite tests into PostgreSQL ones.
  delete process.env.DATABASE_URL;

  project.provide('redisUrl', started.redis!.url);
  project.provide('postgresUrl', started.postgres?.url ?? '');
  project.provide('pgbouncerUrl', started.pgbouncer?.url ?? '');
  return teardown;
}

async function stopRedis(redis: RunningRedis | null, dir: string | undefined): Promise<void> {
  if (!redis) return;
  await redis.stop();
  // stop() leaves a private server's directory behind when the server had already exited.
  if (dir && path.basename(dir).startsWith('bookorders-redis-'))
    fs.rmSync(dir, { recursive: true, force: true });
  forget('redis.pid');
  forget('redis.dir');
}

async function stopPgBouncer(pgbouncer: RunningPgBouncer | null): Promise<void> {
  if (!pgbouncer) return;
  await pgbouncer.stop();
  forget('pgbouncer.dir');
}

async function stopPostgres(postgres: RunningPostgres | null): Promise<void> {
  if (!postgres) return;
  await postgres.stop();
  forget('postgres.dir');
}
