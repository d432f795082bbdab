import type { RedisClient } from '../redis/redis.js';
import { serverStates, type ServerState } from '../server-changes.js';

// Workers and the clock serve no HTTP, so each process of the deployment writes a small snapshot of itself
// (memory, CPU) into one Redis hash every few seconds; web processes expose them with role and pid labels.
// A process that stopped writing (killed, host gone) drops out after three missed beats.
const BEAT_MS = 5000;
export const STALE_AFTER_MS = 3 * BEAT_MS;

/**
 * Which release a process is: the highest migration it knows on its store, and the version of the jobs and
 * messages it writes and reads (protocol.ts). A process that is about to migrate reads these (migration-gate.ts).
 */
export interface Release {
  store: 'sqlite' | 'postgres';
  schema: number;
  protocol: number;
}

export interface Beat {
  rss: number;
  heapUsed: number;
  cpuSeconds: number;
  startedAt: number;
  at: number;
  /** The Redis and PostgreSQL servers the process is connected to (absent in a beat of an older process). */
  servers?: Record<string, ServerState>;
  /** Absent in a beat of a release before this one (which knows at most the migrations its store had). */
  release?: Release;
}

export const keyOf = (prefix: string) => `${prefix}:metrics:processes`;

function beat(now: number, release: Release | undefined): Beat {
  const { user, system } = process.cpuUsage();
  const memory = process.memoryUsage();
  return {
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    cpuSeconds: (user + system) / 1e6,
    startedAt: Math.round(now - process.uptime() * 1000),
    at: now,
    servers: serverStates(),
    ...(release ? { release } : {}),
  };
}

/** A live process of the deployment, from its beat. */
export interface LiveProcess {
  /** `role:pid`, as the beat's field names it. */
  name: string;
  release?: Release;
}

/**
 * The processes whose last beat is at most STALE_AFTER_MS old at `now` (the deployment's shared clock, as the web
 * judges them for /metrics), from the heartbeats' hash; a field that does not parse is skipped.
 */
export function liveProcesses(hash: Record<string, string>, now: number): LiveProcess[] {
  const live: LiveProcess[] = [];
  for (const [name, raw] of Object.entries(hash)) {
    let beat: Partial<Beat>;
    try {
      beat = JSON.parse(raw) as Partial<Beat>;
    } catch {
      continue;
    }
    if (typeof beat.at !== 'number' || now - beat.at > STALE_AFTER_MS) continue;
    live.push(beat.release ? { name, release: beat.release } : { name });
  }
  return live.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Publishes this process's snapshot now and every few seconds; the returned function stops and removes it.
 * `clock` is the deployment's shared one (deps.clock), which the web processes judge the beats by; `release`
 * says which release the process is.
 */
export function startProcessHeartbeat(
  redis: RedisClient,
  prefix: string,
  role: string,
  clock: () => number = Date.now,
  release?: Release,
): () => Promise<void> {
  const field = `${role}:${process.pid}`;
  const publish = () =>
    void redis.hset(keyOf(prefix), field, JSON.stringify(beat(clock(), release))).catch(() => undefined);
  // Commands fail fast while the connection is still opening; the first beat waits for it.
  if (redis.status === 'ready') publish();
  else redis.once('ready', publish);
  const timer = setInterval(publish, BEAT_MS).unref();
  return async () => {
    clearInterval(timer);
    await redis.hdel(keyOf(prefix), field).catch(() => undefined);
  };
}
