import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Logger } from '../../src/logger.js';
import type { JobRecord } from '../../src/metrics/metrics.recorder.js';
import { jobProcessor, type JobWorkResult } from '../../src/processes/job-processor.js';

const schema = z.strictObject({ orderId: z.number().int().positive() });
const logger = { warn: vi.fn() } as unknown as Logger;

function setup(work: () => Promise<JobWorkResult>, retryOn?: (err: unknown) => boolean) {
  const recorded: JobRecord[] = [];
  const delayedTo: number[] = [];
  const job = {
    id: '1',
    name: 'process-order',
    data: { orderId: 7 },
    moveToDelayed: async (at: number) => void delayedTo.push(at),
  } as unknown as Job;
  const run = jobProcessor({
    queue: 'orders',
    schema,
    metrics: { recordJob: async (r: JobRecord) => void recorded.push(r) },
    work,
    retryLater: retryOn && { when: retryOn, afterMs: 1000, logger, message: 'away' },
  });
  return { run, job, recorded, delayedTo };
}

describe('jobProcessor: the one wrapper of every worker', () => {
  it('records a completed run with its queue and name', async () => {
    const { run, job, recorded } = setup(async () => 'completed');
    await run(job, 'token');
    expect(recorded).toMatchObject([{ queue: 'orders', name: 'process-order', result: 'completed' }]);
  });

  it('fails a payload that can never succeed for good, and counts it failed', async () => {
    const { run, job, recorded } = setup(async () => 'completed');
    (job as { data: unknown }).data = { orderId: 'x' };
    await expect(run(job, 'token')).rejects.toBeInstanceOf(UnrecoverableError);
    expect(recorded).toMatchObject([{ result: 'failed' }]);
  });

  it('moves a job its work defers to the delayed set, and does not time it: no attempt was made', async () => {
    const { run, job, recorded, delayedTo } = setup(async () => ({ waitMs: 5000 }));
    const before = Date.now();
    await expect(run(job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(delayedTo[0]).toBeGreaterThanOrEqual(before + 5000);
    expect(recorded).toEqual([]);
  });

  it('delays a job whose error is one to wait out, without using up an attempt; the run counts failed', async () => {
    const away = new Error('store away');
    const { run, job, recorded, delayedTo } = setup(
      async () => Promise.reject(away),
      (err) => err === away,
    );
    await expect(run(job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(delayedTo).toHaveLength(1);
    expect(recorded).toMatchObject([{ result: 'failed' }]);
  });

  it('lets any other error through, for BullMQ to retry', async () => {
    const { run, job, recorded, delayedTo } = setup(
      async () => Promise.reject(new Error('boom')),
      () => false,
    );
    await expect(run(job, 'token')).rejects.toThrow('boom');
    expect(delayedTo).toEqual([]);
    expect(recorded).toMatchObject([{ result: 'failed' }]);
  });
});
