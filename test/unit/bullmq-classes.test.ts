import * as BullMQ from 'bullmq';
import { describe, expect, it } from 'vitest';
import { bullmq } from '../../src/queue/bullmq.js';

describe("the BullMQ classes the service loads by their files' paths", () => {
  it('are the classes BullMQ itself exports, so that instanceof holds across both', () => {
    expect(bullmq.Queue).toBe(BullMQ.Queue);
    expect(bullmq.Worker).toBe(BullMQ.Worker);
    expect(bullmq.UnrecoverableError).toBe(BullMQ.UnrecoverableError);
    expect(bullmq.DelayedError).toBe(BullMQ.DelayedError);
  });
});
