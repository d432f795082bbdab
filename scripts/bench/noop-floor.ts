// The floor under an order: BullMQ's own no-op job on the same Redis, in the same run as the orders it is set
// against. Each job is added, taken by a worker that does nothing, and counted once its `completed` event is
// seen by the adding side (QueueEvents), as an order's answer waits for its end; `inFlight` jobs at once, a payload
// of about the size of an order's job, `removeOnComplete`. The worker runs in a process of its own (this file,
// started with --worker), so that the CPU per job of the adding side and of the working side are read apart, as
// the web's and the worker's are for an order. `drainFloor` is the load bench's backlog drain done by BullMQ alone:
// jobs that only wait, as an order waits for its payment, drained by as many worker processes as the service's.
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { spawnProcess, stopChild } from '../../test/helpers/child-processes.js';
import { treeCpuSeconds } from '../../test/helpers/process-stats.js';
import { redisCommandsSoFar } from './lone-orders.js';
import { percentile } from './samples.js';

/** What the no-op jobs cost, per job. */
export interface Floor {
  jobs: number;
  jobsPerSecond: number;
  /** CPU ms per job of the adding side (this process), the worker process and the Redis server. */
  cpuMs: { adding: number; worker: number; redis: number };
  /** Commands Redis ran per job (INFO commandstats: those run inside BullMQ's scripts included). */
  redisCommands: number;
  /** Each job's time from its add to its `completed` event seen, ms at p50. */
  p50Ms: number;
}

const QUEUE = 'noop';

/** The size of an order's job as BullMQ stores its data (`{"orderId":N}`), for a floor of the same payload. */
export const ORDER_JOB_BYTES = 16;

/**
 * The no-op worker's process: `--worker --url URL --prefix P --concurrency N [--job-ms MS]`; each job waits MS
 * (none by default) and does nothing else; says `ready` once it listens.
 */
async function runWorker(url: string, prefix: string, concurrency: number, jobMs: number): Promise<void> {
  const worker = new Worker(QUEUE, async () => (jobMs > 0 ? sleep(jobMs) : undefined), {
    connection: new Redis(url, { maxRetriesPerRequest: null }),
    prefix,
    concurrency,
  });
  await worker.waitUntilReady();
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
}

/** Starts a no-op worker process (this file with --worker) on `prefix`; resolves once it listens. */
function startNoopWorker(
  redisUrl: string,
  prefix: string,
  concurrency: number,
  jobMs = 0,
): Promise<ChildProcess> {
  const args = [
    '--url',
    redisUrl,
    '--prefix',
    prefix,
    '--concurrency',
    String(concurrency),
    '--job-ms',
    String(jobMs),
  ];
  return spawnProcess(new Set(), 'scripts/bench/noop-floor.ts', {}, 'ready', {
    nodeArgs: ['--import', 'tsx', import.meta.filename, '--worker', ...args],
  });
}

/** A job's data of about `bytes` bytes as BullMQ stores it (JSON), for a floor of an order job's size. */
const payloadOf = (bytes: number) => ({ order: 'x'.repeat(Math.max(0, bytes - 12)) });

/** A queue and its events on `prefix` for `use`, closed after it (the queue's keys removed) whatever happens. */
async function onFloorQueue<T>(
  redisUrl: string,
  prefix: string,
  use: (queue: Queue, events: QueueEvents, connection: Redis) => Promise<T>,
): Promise<T> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  const eventsConnection = connection.duplicate();
  const events = new QueueEvents(QUEUE, { connection: eventsConnection, prefix });
  try {
    return await use(queue, events, connection);
  } finally {
    await events.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    eventsConnection.disconnect();
    connection.disconnect();
  }
}

/** Own CPU seconds of this process so far. */
const ownCpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/**
 * `jobs` no-op jobs through BullMQ on `redisUrl`, `inFlight` at once, each with a payload of `payloadBytes`;
 * `redisPid`: the Redis server's process, to read its CPU (none: Redis's CPU is not counted);
 * `workerConcurrency`: the jobs the worker takes at once (`inFlight` when not given: it then never has a slot free
 * while jobs wait); `warmup`: jobs run first, at the same number in flight, and not counted.
 */
export async function noopFloor(
  redisUrl: string,
  {
    jobs,
    inFlight,
    payloadBytes,
    redisPid,
    workerConcurrency = inFlight,
    warmup = 0,
  }: {
    jobs: number;
    inFlight: number;
    payloadBytes: number;
    redisPid?: number;
    workerConcurrency?: number;
    warmup?: number;
  },
): Promise<Floor> {
  const prefix = `benchfloor${process.pid}`;
  return onFloorQueue(redisUrl, prefix, async (queue, events, connection) => {
    let worker: ChildProcess | undefined;
    try {
      await events.waitUntilReady();
      worker = await startNoopWorker(redisUrl, prefix, workerConcurrency);
      const payload = payloadOf(payloadBytes);
      const waiting = new Map<string, () => void>();
      // A job's event may be read before its add has answered here: it is kept until the add's answer comes.
      const early = new Set<string>();
      events.on('completed', ({ jobId }) => {
        const resolve = waiting.get(jobId);
        if (resolve) resolve();
        else early.add(jobId);
      });
      const oneJob = async () => {
        const job = await queue.add(QUEUE, payload, { removeOnComplete: true });
        const id = job.id!;
        if (early.delete(id)) return;
        await new Promise<void>((resolve) => waiting.set(id, resolve));
        waiting.delete(id);
      };
      /** `n` jobs, `inFlight` at once; each one's ms from its add to its end seen. */
      const run = async (n: number) => {
        const ms: number[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: Math.min(inFlight, n) }, async () => {
            while (next < n) {
              next += 1;
              const started = performance.now();
              await oneJob();
              ms.push(performance.now() - started);
            }
          }),
        );
        return ms;
      };
      await run(warmup);
      const cpuBefore = {
        adding: ownCpu(),
        worker: treeCpuSeconds(worker.pid!),
        redis: redisPid ? treeCpuSeconds(redisPid) : 0,
      };
      const commandsBefore = await redisCommandsSoFar(connection);
      const started = performance.now();
      const ms = await run(jobs);
      const seconds = (performance.now() - started) / 1000;
      // The INFO call that reads the count is itself one command.
      const commands = (await redisCommandsSoFar(connection)) - commandsBefore - 1;
      const perJob = (after: number, before: number) => ((after - before) * 1000) / jobs;
      return {
        jobs,
        jobsPerSecond: jobs / seconds,
        cpuMs: {
          adding: perJob(ownCpu(), cpuBefore.adding),
          worker: perJob(treeCpuSeconds(worker.pid!), cpuBefore.worker),
          redis: redisPid ? perJob(treeCpuSeconds(redisPid), cpuBefore.redis) : NaN,
        },
        redisCommands: commands / jobs,
        p50Ms: percentile(ms, 50),
      };
    } finally {
      if (worker) await stopChild(worker);
    }
  });
}

/**
 * BullMQ's own backlog drain, as the load bench drains orders: `jobs` jobs (a payload of `payloadBytes`,
 * `removeOnComplete`) added while the queue is paused, then `workers` worker processes, each taking `concurrency`
 * jobs at once and each job waiting `jobMs` and doing nothing else (an order's wait for its payment, without the
 * order), ready, and the queue resumed; jobs/s from the resume to the last `completed` event seen.
 */
export async function drainFloor(
  redisUrl: string,
  {
    jobs,
    workers,
    concurrency,
    jobMs,
    payloadBytes,
  }: { jobs: number; workers: number; concurrency: number; jobMs: number; payloadBytes: number },
): Promise<number> {
  const prefix = `benchdrain${process.pid}`;
  return onFloorQueue(redisUrl, prefix, async (queue, events) => {
    const started: ChildProcess[] = [];
    try {
      await queue.pause();
      const data = payloadOf(payloadBytes);
      for (let added = 0; added < jobs; added += 500) {
        const n = Math.min(500, jobs - added);
        await queue.addBulk(
          Array.from({ length: n }, () => ({ name: QUEUE, data, opts: { removeOnComplete: true } })),
        );
      }
      await events.waitUntilReady();
      started.push(
        ...(await Promise.all(
          Array.from({ length: workers }, () => startNoopWorker(redisUrl, prefix, concurrency, jobMs)),
        )),
      );
      let completed = 0;
      const drained = new Promise<number>((resolve) =>
        events.on('completed', () => {
          if ((completed += 1) === jobs) resolve(performance.now());
        }),
      );
      const resumed = performance.now();
      await queue.resume();
      return jobs / (((await drained) - resumed) / 1000);
    } finally {
      await Promise.all(started.map((worker) => stopChild(worker)));
    }
  });
}

/** One run of orders beside the floor taken right after it on the same Redis. */
export interface FloorRow {
  label: string;
  ordersPerSecond: number;
  /** CPU ms per order of the web, the workers and Redis. */
  cpuMs: { web: number; workers: number; redis: number };
  redisCommands: number;
  floor: Floor;
}

/** The orders against their floor, as ratios: what an order costs in no-op jobs. */
export function floorTable(rows: readonly FloorRow[], inFlight: number, payloadBytes: number): string {
  const x = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '–');
  return [
    `The floor: BullMQ's own no-op job on the same Redis right after each run (add → worker → completed event seen, ` +
      `${inFlight} in flight, a ${payloadBytes}-byte payload, \`removeOnComplete\`; the worker in a process of its own). ` +
      'CPU per order of the web, the workers and Redis against CPU per job of the adding side, the no-op worker and Redis; ' +
      'Redis commands from INFO commandstats, those run inside scripts included.',
    '',
    '| run | orders/s ÷ jobs/s | CPU per order ÷ per job: web / worker / Redis | Redis commands per order ÷ per job | jobs/s | CPU ms per job: adding / worker / Redis |',
    '|---|--:|---|---|--:|---|',
    ...rows.map(
      (r) =>
        `| ${r.label} | ${x(r.ordersPerSecond, r.floor.jobsPerSecond)} | ${x(r.cpuMs.web, r.floor.cpuMs.adding)} / ` +
        `${x(r.cpuMs.workers, r.floor.cpuMs.worker)} / ${x(r.cpuMs.redis, r.floor.cpuMs.redis)} | ` +
        `${r.redisCommands.toFixed(1)} ÷ ${r.floor.redisCommands.toFixed(1)} = ${x(r.redisCommands, r.floor.redisCommands)} | ` +
        `${r.floor.jobsPerSecond.toFixed(0)} | ${r.floor.cpuMs.adding.toFixed(2)} / ${r.floor.cpuMs.worker.toFixed(2)} / ${r.floor.cpuMs.redis.toFixed(2)} |`,
    ),
  ].join('\n');
}

if (process.argv.includes('--worker')) {
  const { values } = parseArgs({
    options: {
      worker: { type: 'boolean' },
      url: { type: 'string' },
      prefix: { type: 'string' },
      concurrency: { type: 'string' },
      'job-ms': { type: 'string', default: '0' },
    },
  });
  await runWorker(values.url!, values.prefix!, Number(values.concurrency), Number(values['job-ms']));
}
