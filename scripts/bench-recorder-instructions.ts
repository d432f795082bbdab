// Instructions the worker's metrics cost per order job (issue 45), load-independent: what the order worker does
// with its metrics recorder for each job (the order's end announced along, the order's outcome counted, the job
// timed and awaited until written), `--jobs` times one after another against a private Redis, in this process.
// Run it under callgrind twice, with two numbers of jobs; the difference of the totals over the difference of
// the jobs is the cost of one job (start-up and module loading cancel out):
//   for n in 200 2200; do valgrind --tool=callgrind --callgrind-out-file=/tmp/rec.$n \
//     node --import tsx scripts/bench-recorder-instructions.ts --jobs $n [--checkout DIR]; done
// --checkout DIR:
// the recorder of another checkout's dist/ (build it first), e.g. a `git worktree` of the commit before.
// Prints, after the jobs, the commands Redis ran per job (INFO commandstats).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { redisCommandsSoFar } from './lone-orders.js';
import { ensureRedis } from './redis.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '1000' }, checkout: { type: 'string' } },
});
const JOBS = Number(values.jobs);
const recorderModule = path.join(
  path.resolve(values.checkout ?? ROOT),
  'dist/src/metrics/metrics.recorder.js',
);

async function main() {
  const { createMetricsRecorder } = (await import(
    recorderModule
  )) as typeof import('../src/metrics/metrics.recorder.js');
  const server = await ensureRedis();
  // As the worker's: a connection BullMQ may block on, no retries limit.
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const stats = new Redis(server.url);
  const queue = new Queue('bench', { connection: redis, prefix: 'bench' });
  try {
    // As on the worker's connection, BullMQ's scripts are defined on it (ioredis copies them into each pipeline).
    await queue.waitUntilReady();
    const recorder = createMetricsRecorder(redis, 'bench', pino({ level: 'warn' }));
    const before = await redisCommandsSoFar(stats);
    for (let orderId = 1; orderId <= JOBS; orderId++) {
      // As order.worker-runner.ts and job-processor.ts do for a settled order of two items.
      recorder.sendAlong((pipeline) => pipeline.publish('bench:orders:ended', `order-${orderId}`));
      void recorder.recordOrderSettled([5, 5]);
      await recorder.recordJob({
        queue: 'orders',
        name: 'process-order',
        seconds: 0.003,
        result: 'completed',
      });
    }
    await recorder.flush();
    const commands = (await redisCommandsSoFar(stats)) - before - 1;
    process.stdout.write(`${JOBS} jobs, ${(commands / JOBS).toFixed(2)} Redis commands per job\n`);
  } finally {
    redis.disconnect();
    stats.disconnect();
    await queue.close().catch(() => undefined);
    await server.stop();
  }
}

await main();
