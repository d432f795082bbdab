import type { Job } from 'bullmq';
import { bullmq } from '../queue/bullmq.js';
import type { z } from 'zod';
import type { Logger } from '../logger.js';
import type { JobRecord, MetricsRecorder } from '../metrics/metrics.recorder.js';

/** What a job's work says: done, or to wait `waitMs` in the queue without using up an attempt. */
export type JobWorkResult = 'completed' | { waitMs: number };

export interface JobSpec<T> {
  queue: string;
  /** The payload's schema: a payload that can never succeed fails for good instead of retrying. */
  schema: z.ZodType<T>;
  metrics: Pick<MetricsRecorder, 'recordJob'>;
  work(data: T, job: Job): Promise<JobWorkResult>;
  /** Errors after which the job waits `afterMs` and runs again without using up an attempt. */
  retryLater?: { when(err: unknown): boolean; afterMs: number; logger: Logger; message: string };
}

/**
 * The one wrapper of every worker's jobs: parses the payload, runs the work, moves a job that must wait back to
 * the delayed set, and times each run (a wait the work asked for is not a run, and is not timed).
 */
export function jobProcessor<T>(spec: JobSpec<T>) {
  return async (job: Job, token?: string): Promise<void> => {
    const started = performance.now();
    let result: JobRecord['result'] | 'deferred' = 'failed';
    try {
      const parsed = spec.schema.safeParse(job.data);
      if (!parsed.success)
        throw new bullmq.UnrecoverableError(`bad payload for ${job.name}: ${parsed.error.message}`);
      const outcome = await spec.work(parsed.data, job);
      if (outcome !== 'completed') {
        result = 'deferred';
        await job.moveToDelayed(Date.now() + outcome.waitMs, token);
        throw new bullmq.DelayedError();
      }
      result = 'completed';
    } catch (err) {
      const later = spec.retryLater;
      if (result === 'deferred' || !later?.when(err) || !token) throw err;
      later.logger.warn({ jobId: job.id, err: (err as Error).message }, later.message);
      await job.moveToDelayed(Date.now() + later.afterMs, token);
      throw new bullmq.DelayedError();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      if (result !== 'deferred')
        await spec.metrics.recordJob({ queue: spec.queue, name: job.name, seconds, result });
    }
  };
}
