import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { boundMessages } from '../../src/http/errors.js';
import { metricsListener } from '../../src/http/metrics.js';
import { sharedInFlight } from '../../src/services/read-cache.js';
import { jsonOverflow } from '../../src/http/json-body.js';
import { readableError } from '../../src/domain/readable-input.js';
import { LOG_LIMITS, boundForLog } from '../../src/logger.js';

const limits = { maxDepth: 4, maxValues: 20 };
const scan = (text: string) => jsonOverflow(Buffer.from(text), limits);

describe('the scan of a JSON body before it is parsed', () => {
  it('passes an order-sized body, and ignores brackets, commas and quotes inside strings', () => {
    expect(scan('{"a":[1,2,{"b":"c"}],"d":"[[[[[,,,,,]]]]]\\"[[[[["}')).toBeNull();
    expect(scan('')).toBeNull();
  });

  it('names the limit passed and the root member it was passed in, with its entries read so far', () => {
    expect(scan('{"ok":1,"deep":[[[[1]]]]}')).toEqual({ limit: 'depth', member: 'deep', entries: 1 });
    const many = `{"shipAddr":{},"listings":[${Array(30).fill('1').join(',')}]}`;
    expect(scan(many)).toMatchObject({ limit: 'values', member: 'listings' });
    expect(scan(many)!.entries).toBeGreaterThan(15);
    expect(scan(`[${Array(30).fill('1').join(',')}]`)).toMatchObject({ limit: 'values', member: undefined });
  });

  it('decodes an escaped member name', () => {
    expect(scan(`{"li\\u0073tings":[${Array(30).fill('1').join(',')}]}`)?.member).toBe('listings');
  });
});

describe('the messages of one answer', () => {
  it('keeps the first 50, each cut to 300 characters, and says how many more there were', () => {
    const messages = Array.from(
      { length: 45_001 },
      (_, i) => `listings[${i}]: ${'x'.repeat(i === 0 ? 1000 : 5)}`,
    );
    const bounded = boundMessages(messages);
    expect(bounded).toHaveLength(51);
    expect(bounded[0]).toHaveLength(300);
    expect(bounded[50]).toBe('and 44951 more problems');
    expect(boundMessages(['one'])).toEqual(['one']);
  });

  it('names a few unknown fields, each cut short and escaped', () => {
    const keys = Object.fromEntries([
      ['k'.repeat(1000), 1],
      ['a\u0001"b', 1],
      ...Array.from({ length: 20 }, (_, i) => [`f${i}`, 1]),
    ]);
    const result = z.strictObject({}).safeParse(keys, { error: readableError });
    const [message] = result.error!.issues.map((i) => i.message);
    expect(message).toMatch(/^unknown fields 'k{40}…', 'a\\u0001\\"b', 'f0', .* and 12 more$/);
  });
});

describe('a logged object', () => {
  it('is cut to the log limits: long strings, long arrays, deep nesting, many fields, buffers', () => {
    const logged = {
      messages: Array.from({ length: 45_000 }, (_, i) => `message ${i}`),
      big: 'x'.repeat(100_000),
      deep: { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } },
      fields: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`f${i}`, i])),
      body: Buffer.alloc(1024 * 1024),
      ok: 42,
    };
    const bounded = boundForLog(logged) as Record<string, unknown>;
    expect(JSON.stringify(bounded).length).toBeLessThan(LOG_LIMITS.budget * 1.5);
    expect((bounded.messages as string[]).at(-1)).toMatch(/more\]$/);
    expect(bounded.big).toMatch(/…\[96000 more chars\]$/);
    expect(bounded.body).toBe(`[${1024 * 1024} bytes]`);
    expect(bounded.ok).toBe(42);
    expect(JSON.stringify(bounded.deep)).toContain('[object]');
  });

  it('is left as it is when it is small', () => {
    const small = { method: 'GET', path: '/healthz', status: 200, ms: 1.5 };
    expect(boundForLog(small)).toEqual(small);
  });
});

describe('a computation shared by concurrent callers', () => {
  it('runs once for every caller that comes while it is in flight, and again for a caller after it', async () => {
    let runs = 0;
    let finish!: (value: number) => void;
    const shared = sharedInFlight(() => {
      runs++;
      return new Promise<number>((resolve) => (finish = resolve));
    });
    const waiting = Array.from({ length: 10 }, () => shared());
    finish(42);
    expect(await Promise.all(waiting)).toEqual(Array(10).fill(42));
    expect(runs).toBe(1);
    const later = shared();
    finish(43);
    expect(await later).toBe(43);
    expect(runs).toBe(2);
  });

  it('lets a failed run fail its callers only: the next caller runs it again', async () => {
    let runs = 0;
    const shared = sharedInFlight(async () => {
      if (++runs === 1) throw new Error('down');
      return 'up';
    });
    await expect(Promise.all([shared(), shared()])).rejects.toThrow('down');
    expect(await shared()).toBe('up');
    expect(runs).toBe(2);
  });

  it('serves a thousand concurrent scrapes of /metrics with one collection', async () => {
    let collections = 0;
    let finish!: (text: string) => void;
    const route = metricsListener(() => {
      collections++;
      return new Promise<string>((resolve) => (finish = resolve));
    }, new Registry());
    const sent: string[] = [];
    const res = { writeHead: () => res, end: (text: string) => sent.push(text) } as unknown as ServerResponse;
    const req = { url: '/metrics', method: 'GET' } as IncomingMessage;
    const scrapes = Array.from({ length: 1000 }, () => route(req, res));
    // The process's own series are collected on the turn after the scrape sends its Redis reads.
    await new Promise((resolve) => setImmediate(resolve));
    finish('own_series 1\n');
    await Promise.all(scrapes);
    expect(collections).toBe(1);
    expect(sent).toHaveLength(1000);
    expect(new Set(sent).size).toBe(1);
  });
});
