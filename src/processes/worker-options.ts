import type { Telemetry, WorkerOptions } from 'bullmq';
import type { Config } from '../config/config.js';
import type { RedisClient } from '../redis/redis.js';
import { queueTelemetry } from '../tracing/tracing.js';

/** What a queue's workers decide for themselves: how many jobs at once, and how soon a dead worker's job is taken over. */
export interface OwnWorkerOptions {
  concurrency: number;
  /** A job's lock, renewed while it runs: a dead worker's job is taken over within about this long. */
  lockDuration: number;
  /** How often a job may stall (its worker gone) before it fails instead of running again. */
  maxStalledCount: number;
}

/**
 * The options every worker of a process shares (its blocking connection, the deployment's prefix, traces, and
 * BullMQ's check for stalled jobs every 5 s), with what the queue's own worker decides.
 */
export function workerOptions(
  config: Pick<Config, 'REDIS_PREFIX'>,
  connection: RedisClient,
  own: OwnWorkerOptions,
): WorkerOptions {
  return {
    connection,
    prefix: config.REDIS_PREFIX,
    telemetry: queueTelemetry<Telemetry>(),
    stalledInterval: 5_000,
    ...own,
  };
}
