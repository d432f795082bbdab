// Instructions the worker's metrics cost per order job, load-independent: what the order worker does
// with its metrics recorder for each job (the order's end announced along, the order's outcome counted, the job
// timed and awaited until written), one job after another against a private Redis, in this process, on a
// connection that BullMQ's scripts are defined on (as the worker's is). Run under callgrind with instrumentation
// off: it runs --warmup jobs, switches instrumentation on (callgrind_control) for --jobs jobs, and prints the
// instructions of its main thread per job, and the commands Redis ran per job (INFO commandstats):
//   valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes --callgrind-out-file=/tmp/rec.out \
//     node --import tsx scripts/bench/recorder-instructions.ts [--jobs 2000] [--warmup 2000] [--checkout DIR]
// --checkout DIR: the recorder of another checkout's dist/ (build it first), e.g. a `git worktree` of the commit
// before. The dump is read from /tmp/rec.out (the --callgrind-out-file above; --out to change it).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { redisCommandsSoFar } from './lone-orders.js';
import { callgrindTotal } from '../../test/helpers/process-stats.js';
import { ensureRedis } from '../redis.js';
import { ROOT } from './processes.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  jobs: '2000',
  warmup: '2000',
  checkout: undefined,
  out: '/tmp/rec.out',
});
const JOBS = Number(values.jobs);
const WARMUP = Number(values.warmup);
const recorderModule = path.join(
  path.resolve(values.checkout ?? ROOT),
  'dist/src/metrics/metrics.recorder.js',
);

async function main() {
  const { createMetricsRecorder } = (await import(
    recorderModule
  )) as typeof import('../../src/metrics/metrics.recorder.js');
  const server = await ensureRedis();
  // As the worker's: a connection BullMQ may block on, no retries limit.
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const stats = new Redis(server.url);
  const queue = new Queue('bench', { connection: redis, prefix: 'bench' });
  try {
    // As on the worker's connection, BullMQ's scripts are defined on it (ioredis copies them into each pipeline).
    await queue.waitUntilReady();
    const recorder = createMetricsRecorder(redis, 'bench', pino({ level: 'warn' }));
    const jobs = async (from: number, n: number) => {
      for (let orderId = from; orderId < from + n; orderId++) {
        // As order.worker-runner.ts and job-processor.ts do for a settled order of two items.
        recorder.sendAlong((commands) => commands.publish('bench:orders:ended', `order-${orderId}`));
        void recorder.recordOrderSettled([5, 5]);
        await recorder.recordJob({
          queue: 'orders',
          name: 'process-order',
          seconds: 0.003,
          result: 'completed',
        });
      }
      await recorder.flush();
    };
    await jobs(1, WARMUP);
    const pid = String(process.pid);
    execFileSync('callgrind_control', ['-i', 'on', pid]);
    const before = await redisCommandsSoFar(stats);
    await jobs(WARMUP + 1, JOBS);
    const commands = (await redisCommandsSoFar(stats)) - before - 1;
    execFileSync('callgrind_control', ['-i', 'off', pid]);
    execFileSync('callgrind_control', ['-d', pid]);
    const total = callgrindTotal(`${values.out}.1-01`);
    process.stdout.write(
      `${recorderModule}: ${Math.round(total / JOBS).toLocaleString('en')} instructions per job on the main ` +
        `thread, ${(commands / JOBS).toFixed(2)} Redis commands per job (${JOBS} jobs after ${WARMUP})\n`,
    );
  } finally {
    redis.disconnect();
    stats.disconnect();
    await queue.close().catch(() => undefined);
    await server.stop();
  }
}

await main();
