// prom-client's default collectors read ahead of each scrape: a scrape at a steady interval finds figures read a
// little before it and reads nothing itself; a timer runs only while scrapes come, and a rare scrape reads its own.
import { Gauge, Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { collectAhead } from '../../src/metrics/collect-ahead.js';

// The fake timers' clock: Date.now() moves with vi.advanceTimersByTime.
const now = () => Date.now();
beforeEach(() => {
  vi.useFakeTimers();
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
