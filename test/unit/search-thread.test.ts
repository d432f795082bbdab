// The search thread's own failures (search-thread.ts), on a scratch SQLite file: each fails its search only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  GATE_OPEN,
  GATE_SEARCHES,
  GATE_THREADS,
  SEARCH_THREADS_MAX,
  SearchTimeoutError,
  searchGate,
  searchThread,
  type SearchThread,
} from '../../src/store/sqlite/search-thread.js';
import { until } from '../helpers/wait.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-thread-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let thread: SearchThread | undefined;
afterEach(() => thread?.close());

/** A page of one order with no items, as search.sqlite.ts's statements return it. */
const ONE_ORDER = {
  pageSql: "SELECT 7, 1000, 'USD', NULL, NULL, NULL",
  itemsSql: 'SELECT * FROM json_each(@pageIds) WHERE 0',
  params: {},
};
const PAGE = {
  orders: [
    {
      order: {
        orderId: 7,
        createdAt: 1000,
        currency: 'USD',
        taxCents: null,
        taxModel: null,
        referenceId: null,
      },
      items: [],
    },
  ],
  more: false,
};

/**
 * A statement that runs some seconds in SQLite's native code and reads nothing: a search whose plan reads far more
 * than its page. Terminating its thread does not stop it.
 */
const LONG = {
  ...ONE_ORDER,
  pageSql: `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 8000000)
    SELECT 7, 1000, 'USD', NULL, NULL, NULL FROM n WHERE x = 0`,
};

/** This process's threads (Linux: one entry each in /proc/self/task) and resident memory. */
function usage(): { threads: number; rssMb: number } {
  return { threads: fs.readdirSync('/proc/self/task').length, rssMb: process.memoryUsage().rss / 2 ** 20 };
}

function newFile(name: string): string {
  const file = path.join(dir, name);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.close();
  return file;
}

// First in the file: the threads it counts are its own, none of another test's still ending.
describe('searches given up on', () => {
  it('keeps at most SEARCH_THREADS_MAX threads when searches keep running past their deadline, and answers once they end', async () => {
    // libuv's thread pool starts whole at its first use: before the count, not during it.
    await fs.promises.stat(dir);
    const before = usage();
    // What one search thread costs this process in threads (under tsx, a thread loads its code through a loader
    // thread of its own).
    thread = searchThread(newFile('abandoned.db'), { timeoutMs: 50 });
    await expect(thread.run(1, ONE_ORDER, 1)).resolves.toEqual(PAGE);
    const perThread = usage().threads - before.threads;
    let most = before;
    const sampler = setInterval(() => {
      const now = usage();
      most = { threads: Math.max(most.threads, now.threads), rssMb: Math.max(most.rssMb, now.rssMb) };
    }, 20);
    try {
      for (let i = 0; i < 12; i += 1)
        await expect(thread.run(1, LONG, 1)).rejects.toBeInstanceOf(SearchTimeoutError);
      // Each thread let go ends once its statement does, seconds later; then searches are answered again.
      await until(() => usage().threads <= before.threads, 60_000, 'the threads let go ending');
      await expect(thread.run(1, ONE_ORDER, 1)).resolves.toEqual(PAGE);
    } finally {
      clearInterval(sampler);
    }
    // A thread of its own each, and the heap and connection it holds (at most 64 MB of heap each).
    expect(perThread).toBeGreaterThanOrEqual(1);
    expect(most.threads - before.threads).toBeLessThanOrEqual(SEARCH_THREADS_MAX * perThread);
    expect(most.rssMb - before.rssMb).toBeLessThanOrEqual(SEARCH_THREADS_MAX * 100);
  }, 120_000);
});

describe('the search thread', () => {
  it('fails a search whose thread cannot open its file, and gives the next a new thread', async () => {
    const file = path.join(dir, 'later.db');
    const gate = searchGate();
    Atomics.store(gate, GATE_OPEN, 1);
    thread = searchThread(file, { timeoutMs: 0, gate });
    await expect(thread.run(1, ONE_ORDER, 1)).rejects.toThrow(/^the search thread stopped: .*later\.db/);
    newFile('later.db');
    await expect(thread.run(1, ONE_ORDER, 1)).resolves.toEqual(PAGE);
    expect(Atomics.load(gate, GATE_THREADS)).toBe(1);
  });

  it("hands back a statement's failure with its code, and goes on on the same thread", async () => {
    const gate = searchGate();
    Atomics.store(gate, GATE_OPEN, 1);
    thread = searchThread(newFile('errors.db'), { timeoutMs: 0, gate });
    await expect(thread.run(1, { ...ONE_ORDER, pageSql: 'SELECT * FROM missing' }, 1)).rejects.toMatchObject({
      code: 'SQLITE_ERROR',
      message: expect.stringMatching(/no such table: missing/),
    });
    await expect(thread.run(1, ONE_ORDER, 1)).resolves.toEqual(PAGE);
    expect(Atomics.load(gate, GATE_THREADS)).toBe(1);
  });

  it('fails past the deadline the search it holds and those that wait behind it', async () => {
    const gate = searchGate();
    thread = searchThread(newFile('deadline.db'), { timeoutMs: 1000, gate });
    const held = thread.run(1, ONE_ORDER, 1);
    await until(() => Atomics.load(gate, GATE_SEARCHES) === 1, 30_000, 'the search on the thread');
    const waiting = thread.run(2, ONE_ORDER, 1);
    const [first, second] = await Promise.allSettled([held, waiting]);
    expect(first).toEqual({ status: 'rejected', reason: expect.any(SearchTimeoutError) });
    expect(second).toEqual({ status: 'rejected', reason: expect.any(SearchTimeoutError) });
    Atomics.store(gate, GATE_OPEN, 1);
    Atomics.notify(gate, GATE_OPEN);
    await expect(thread.run(1, ONE_ORDER, 1)).resolves.toEqual(PAGE);
  });
});
