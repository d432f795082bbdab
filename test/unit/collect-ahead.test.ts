// prom-client's default collectors read ahead of each scrape: a scrape at a steady interval finds figures read a
// little before it and reads nothing itself; a timer runs only while scrapes come, and a rare scrape reads its own.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Gauge, Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { metricsListener } from '../../src/http/metrics.js';
import { collectAhead } from '../../src/metrics/collect-ahead.js';

// The fake timers' clock: Date.now() moves with vi.advanceTimersByTime.
const now = () => Date.now();
beforeEach(() => {
  // performance.now() too: the metrics listener's cadence reads it.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'Date', 'performance'] });
  vi.setSystemTime(0);
});
afterEach(() => vi.useRealTimers());

/** A registry of two gauges whose collect counts its reads and sets the time of the read. */
function readings() {
  const registry = new Registry();
  const reads: number[] = [];
  new Gauge({
    name: 'read_at',
    help: 'when read',
    registers: [registry],
    collect() {
      reads.push(now());
      this.set(now());
    },
  });
  new Gauge({ name: 'other', help: 'read with it', registers: [registry], collect() {} });
  const ahead = collectAhead(registry.getMetricsAsArray(), { maxAgeMs: 1000, leadMs: 250, now });
  return { registry, reads, ahead };
}

/** Moves the fake clock (and its timers) on by `ms`. */
const wait = (ms: number) => vi.advanceTimersByTime(ms);

const valueAt = async (registry: Registry) =>
  (await registry.getSingleMetricAsString('read_at')).split(' ').pop();

describe('collectAhead', () => {
  it('when scraped every 15 s, then from the third scrape on each scrape shows a reading taken 250 ms before it, read once', async () => {
    const { registry, reads, ahead } = readings();
    await registry.metrics();
    wait(15_000);
    await registry.metrics();
    expect(reads).toEqual([0, 15_000]);
    wait(15_000);
    expect(await registry.metrics()).toContain('read_at 29750');
    wait(15_000);
    expect(await valueAt(registry)).toBe('44750');
    // Each scrape read once, by the timer or itself: never twice for two gauges.
    expect(reads).toEqual([0, 15_000, 29_750, 44_750]);
    expect(ahead.ahead).toBe(2);
  });

  it('when scrapes stop, then one reading follows the last and the timer stops', async () => {
    const { registry, reads } = readings();
    for (let i = 0; i < 3; i++) {
      await registry.metrics();
      wait(1100);
    }
    const readsSoFar = reads.length;
    wait(60_000);
    expect(reads.length).toBe(readsSoFar);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('when the next scrape comes long after the reading ahead, then it reads its own figures', async () => {
    const { registry, reads } = readings();
    await registry.metrics();
    wait(10_000);
    await registry.metrics();
    wait(9750);
    expect(reads).toEqual([0, 10_000, 19_750]);
    // Late: the reading ahead is 2.25 s old at the scrape, more than maxAgeMs.
    wait(2250);
    expect(await valueAt(registry)).toBe('22000');
  });
});

describe('the metrics listener, scraped at a steady interval', () => {
  /** A listener whose own series is the time they were collected at; scrape() answers that time. */
  function listener() {
    let collections = 0;
    const route = metricsListener(
      () => {
        collections++;
        return Promise.resolve(`collected_at ${now()}\n`);
      },
      new Registry(),
      1000,
    );
    const scrape = async () => {
      let body = '';
      const res = {
        writeHead: () => res,
        end: (text: string) => (body = text),
      } as unknown as ServerResponse;
      const answered = route({ url: '/metrics', method: 'GET' } as IncomingMessage, res);
      // The process's own series are collected on the next turn (setImmediate).
      await vi.advanceTimersByTimeAsync(0);
      await answered;
      return Number(/^collected_at (\d+)/.exec(body)?.[1]);
    };
    return { scrape, collections: () => collections };
  }
  // Collected 250 ms before `at` (its own series a turn after the timer, which the fake clock counts as 1 ms).
  const aheadOf = (at: number) => [at - 250, at - 249];

  it('when scraped every 15 s, then from the third scrape on it answers a text collected 250 ms before, one collection a scrape', async () => {
    const { scrape, collections } = listener();
    expect(await scrape()).toBe(0);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(await scrape()).toBe(15_000);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(aheadOf(30_000)).toContain(await scrape());
    await vi.advanceTimersByTimeAsync(15_000);
    expect(aheadOf(45_000)).toContain(await scrape());
    expect(collections()).toBe(4);
  });

  it('when a scrape comes later than METRICS_REUSE_MS after the text collected ahead, then it collects its own', async () => {
    const { scrape, collections } = listener();
    await scrape();
    await vi.advanceTimersByTimeAsync(10_000);
    await scrape();
    // Collected ahead at 19,750; the scrape at 21,000 finds it 1,250 ms old, more than 1,000.
    await vi.advanceTimersByTimeAsync(11_000);
    expect(await scrape()).toBe(21_000);
    expect(collections()).toBe(4);
  });
});
