import type { Config } from '../config/config.js';
import { keyOf, liveProcesses, type LiveProcess } from './process-heartbeat.js';
import { createRedis, type RedisClient } from '../redis/redis.js';
import { whenReady } from '../redis/redis-lock.js';
import type { MigrationGate, PendingMigration } from '../store/port/migrations.port.js';

const REDIS_WAIT_MS = 5_000;

/** What a process that must not migrate says: which migrations, which live processes, and what to do. */
export class OlderProcessesRunningError extends Error {
  constructor(
    readonly breaking: readonly PendingMigration[],
    readonly processes: readonly LiveProcess[],
  ) {
    super(
      `not migrating: ${breaking.map((m) => `migration ${m.version} (${m.name})`).join(', ')} would break ` +
        `${processes.length} process(es) of an earlier release still running: ` +
        `${processes.map((p) => p.name).join(', ')}. Stop the processes of the previous release first, then ` +
        'start this one (docs/operating.md, Releases side by side)',
    );
    this.name = 'OlderProcessesRunningError';
  }
}

/**
 * The live processes that a migration would break: those whose beat says they do not know it (a release on the
 * same kind of store whose highest migration is below it), and those whose beat carries no release (a release
 * before this one, which knows at most the migrations the store already had).
 */
export function processesBrokenBy(
  live: readonly LiveProcess[],
  kind: 'sqlite' | 'postgres',
  migration: PendingMigration,
): LiveProcess[] {
  if (migration.besideOlder) return [];
  return live.filter(
    ({ release }) => !release || (release.store === kind && release.schema < migration.version),
  );
}

/**
 * The gate of a process's migrations: when one of them cannot run beside processes that do not know it, the
 * deployment's heartbeats are read (judged by Redis's clock, which the shared clock follows) and the migration is
 * refused while any such process is alive. A Redis that cannot be reached refuses too: nothing says no such
 * process runs. Migrations that every earlier release runs beside never touch Redis here.
 */
export function migrationGate(
  config: Config,
  connect: () => RedisClient = () => createRedis(config, `${config.QUEUE_PREFIX}-migrations`),
): MigrationGate {
  return async (kind, pending) => {
    if (pending.every((m) => m.besideOlder)) return;
    const redis = connect();
    redis.on('error', () => undefined);
    try {
      await whenReady(redis, REDIS_WAIT_MS).catch((err: Error) => {
        throw new Error(
          `not migrating: migrations ${pending.map((m) => m.version).join(', ')} cannot run beside processes of an ` +
            `earlier release, and Redis, where their heartbeats are, cannot be reached to see whether any runs (${err.message})`,
        );
      });
      const [hash, [seconds, micros]] = await Promise.all([
        redis.hgetall(keyOf(config.REDIS_PREFIX)),
        redis.time(),
      ]);
      const live = liveProcesses(hash, Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
      const breaking = pending.filter((m) => processesBrokenBy(live, kind, m).length > 0);
      if (breaking.length === 0) return;
      const processes = [...new Set(breaking.flatMap((m) => processesBrokenBy(live, kind, m)))];
      throw new OlderProcessesRunningError(breaking, processes);
    } finally {
      redis.disconnect();
    }
  };
}
