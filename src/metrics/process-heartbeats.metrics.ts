// The web's side of the heartbeats (process-heartbeat.ts): gauges of every live process, read at scrape time. Kept
// apart so that a worker and the clock, which only publish their beat, never load prom-client (whose index loads
// its default collectors, Pushgateway and @opentelemetry/api: 1.8 MiB of heap with --enable-source-maps).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { RedisClient } from '../redis/redis.js';
import { STALE_AFTER_MS, keyOf, type Beat } from './process-heartbeat.js';
import type { ScrapeReads } from './scrape-reads.js';

/**
 * Gauges of every live process of the deployment, read from the heartbeats at scrape time (through `reads`, the
 * scrape's batched reads, when given).
 */
export function registerProcessHeartbeats(
  redis: RedisClient,
  prefix: string,
  registry: Registry,
  reads: Pick<ScrapeReads, 'hgetall'> = redis,
  clock: () => number = Date.now,
): void {
  let beats: { role: string; pid: string; beat: Beat }[] = [];
  const read = async () => {
    const hash = await reads.hgetall(keyOf(prefix)).catch(() => ({}) as Record<string, string>);
    const now = clock();
    const stale: string[] = [];
    beats = [];
    for (const [field, raw] of Object.entries(hash)) {
      const beat = JSON.parse(raw) as Beat;
      if (now - beat.at > STALE_AFTER_MS) {
        stale.push(field);
        continue;
      }
      const at = field.lastIndexOf(':');
      beats.push({ role: field.slice(0, at), pid: field.slice(at + 1), beat });
    }
    if (stale.length) await redis.hdel(keyOf(prefix), ...stale).catch(() => undefined);
  };
  // One read of Redis per scrape: the registry asks every metric at once, in registration order, so the first
  // gauge starts the read and the others wait for the same one.
  let reading: Promise<void> = Promise.resolve();
  const labelNames = ['role', 'pid'] as const;
  new Gauge({
    name: 'bookorders_processes',
    help: 'Live processes of the deployment by role (web, worker, clock), from their heartbeats',
    labelNames: ['role'] as const,
    registers: [registry],
    async collect() {
      reading = read();
      await reading;
      this.reset();
      for (const { role } of beats) this.inc({ role });
    },
  });
  const perProcess = (name: string, help: string, value: (b: Beat) => number) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        await reading;
        this.reset();
        for (const { role, pid, beat } of beats) this.set({ role, pid }, value(beat));
      },
    });
  perProcess('bookorders_process_resident_memory_bytes', 'Resident memory of each process', (b) => b.rss);
  perProcess('bookorders_process_heap_used_bytes', 'V8 heap in use in each process', (b) => b.heapUsed);
  perProcess('bookorders_process_start_time_seconds', 'Start time of each process, Unix seconds', (b) =>
    Math.round(b.startedAt / 1000),
  );
  registerServerChanges(
    registry,
    () => reading,
    () => beats,
  );
  new Counter({
    name: 'bookorders_process_cpu_seconds_total',
    help: 'User and system CPU time of each process',
    labelNames,
    registers: [registry],
    async collect() {
      await reading;
      this.reset();
      for (const { role, pid, beat } of beats) this.inc({ role, pid }, beat.cpuSeconds);
    },
  });
}

/** Each process's server per link (Redis, PostgreSQL), since when, and how many times it changed (failovers). */
function registerServerChanges(
  registry: Registry,
  reading: () => Promise<void>,
  beats: () => { role: string; pid: string; beat: Beat }[],
): void {
  const each = function* () {
    for (const { role, pid, beat } of beats())
      for (const [link, state] of Object.entries(beat.servers ?? {}))
        yield { labels: { role, pid, link }, state };
  };
  new Gauge({
    name: 'bookorders_process_server_info',
    help: 'The server (host:port) each process is connected to, per link (redis, postgres): 1',
    labelNames: ['role', 'pid', 'link', 'server'] as const,
    registers: [registry],
    async collect() {
      await reading();
      this.reset();
      for (const { labels, state } of each()) this.set({ ...labels, server: state.server }, 1);
    },
  });
  new Gauge({
    name: 'bookorders_process_server_since_seconds',
    help: "When each process's server of a link last changed (or was first reached), Unix seconds",
    labelNames: ['role', 'pid', 'link'] as const,
    registers: [registry],
    async collect() {
      await reading();
      this.reset();
      for (const { labels, state } of each()) this.set(labels, Math.round(state.since / 1000));
    },
  });
  new Counter({
    name: 'bookorders_process_server_changes_total',
    help: "Times each process's server of a link changed since it started: a failover, seen by that process",
    labelNames: ['role', 'pid', 'link'] as const,
    registers: [registry],
    async collect() {
      await reading();
      this.reset();
      for (const { labels, state } of each()) this.inc(labels, state.changes);
    },
  });
}
