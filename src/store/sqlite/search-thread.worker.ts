// The search thread (search-thread.ts): reads the pages it is sent on a read-only connection of its own.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { PageStatements } from './search-page.sqlite.js';
import { readPage, statementCache } from './search-page.sqlite.js';
import {
  GATE_OPEN,
  GATE_SEARCHES,
  GATE_THREADS,
  type SearchGate,
  type ThreadAnswer,
} from './search-thread.js';

const { file, gate } = workerData as { file: string; gate?: SearchGate };
const db = openReadOnly(file);
const prepared = statementCache(db);
// One read transaction: the page and its items come from the same snapshot.
const read = db.transaction((statements: PageStatements, limit: number) =>
  readPage(prepared, statements, limit),
);
if (gate) Atomics.add(gate, GATE_THREADS, 1);
parentPort!.postMessage({ ready: true } satisfies ThreadAnswer);

// Thrown as a plain Error: better-sqlite3's own loses its message on its way to the parent thread.
function openReadOnly(file: string): Database.Database {
  try {
    return new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new Error(`cannot open ${file}: ${(err as Error).message}`, { cause: err });
  }
}

parentPort!.on('message', ({ statements, limit }: { statements: PageStatements; limit: number }) => {
  if (gate) {
    Atomics.add(gate, GATE_SEARCHES, 1);
    Atomics.wait(gate, GATE_OPEN, 0);
  }
  let answer: ThreadAnswer;
  try {
    answer = { page: read.deferred(statements, limit) };
  } catch (err) {
    const { message, code } = err as { message: string; code?: unknown };
    answer = { error: { message, code: typeof code === 'string' ? code : undefined } };
  }
  parentPort!.postMessage(answer);
});
