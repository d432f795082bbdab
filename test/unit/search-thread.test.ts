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

function newFile(name: string): string {
  const file = path.join(dir, name);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.close();
  return file;
}

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
