import { Worker } from 'node:worker_threads';
import type { SearchPage } from '../port/store.port.js';
import type { PageStatements } from './search-page.sqlite.js';

/** A thread with nothing to do for this long is let go: a process that rarely searches holds none. */
export const SEARCH_THREAD_IDLE_MS = 30_000;

/**
 * The thread's heap: a page is at most 100 orders and their items, a few MB; past this the thread stops
 * (ERR_WORKER_OUT_OF_MEMORY) and only its search fails.
 */
export const THREAD_HEAP_MB = 64;

/**
 * Threads a process has at most, counting those let go that still finish a search given up on: terminating a thread
 * stops its JavaScript, but a statement in SQLite's native code runs on until it returns (better-sqlite3 exposes no
 * interrupt nor progress handler), and only then does the thread end. While this many live, searches wait for one
 * to end (their deadline counting), so a client whose searches all time out cannot pile threads and heaps up.
 */
export const SEARCH_THREADS_MAX = 2;

/**
 * How long a new thread may take to open its connection (loading its modules; under tsx, compiling them) before
 * the search it was started for fails as a timed-out one: the search's own deadline counts from then.
 */
const THREAD_START_MS = 30_000;

export interface SearchThreadOptions {
  /**
   * How long a search may wait for the thread, and then run on it once the thread has opened its connection,
   * before it fails as unavailable (SearchTimeoutError: the web answers 503 5030 with Retry-After), as
   * DATABASE_TIMEOUT_MS bounds PostgreSQL's wait for a connection and then its statement; the thread of one
   * still running is replaced. 0: no bound.
   */
  timeoutMs: number;
  /** How long the thread is kept with nothing to do; SEARCH_THREAD_IDLE_MS when absent. */
  idleMs?: number;
  /** Tests only (searchGate): holds each search on the thread until the test opens the gate. */
  gate?: SearchGate;
}

/**
 * Tests only: a thread given a gate adds one to GATE_THREADS when it starts and to GATE_SEARCHES when it takes a
 * search, then holds the search while GATE_OPEN is 0.
 */
export type SearchGate = Int32Array;
export const GATE_OPEN = 0;
export const GATE_THREADS = 1;
export const GATE_SEARCHES = 2;
export const searchGate = (): SearchGate => new Int32Array(new SharedArrayBuffer(3 * 4));

/** A search with no answer within the deadline: the store is unavailable for it (store-errors.ts, ETIMEDOUT). */
export class SearchTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(timeoutMs: number) {
    super(`the search gave no answer within ${timeoutMs} ms (DATABASE_TIMEOUT_MS)`);
    this.name = 'SearchTimeoutError';
  }
}

/**
 * The thread's file and how to load it: in dist a .js file; under tsx (tests, `npm run dev:*`) a .ts file, which
 * the thread loads through tsx's API (on Node 20 a worker given `--import tsx` in its execArgv does not apply
 * tsx's hooks to its own entry: ERR_UNKNOWN_FILE_EXTENSION).
 */
function threadEntry(): [URL | string, { eval?: boolean }] {
  if (!import.meta.url.endsWith('.ts')) return [new URL('./search-thread.worker.js', import.meta.url), {}];
  const entry = new URL('./search-thread.worker.ts', import.meta.url).href;
  const api = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return [
    `import(${api}).then((tsx) => tsx.tsImport(${JSON.stringify(entry)}, ${JSON.stringify(entry)}))`,
    { eval: true },
  ];
}

/** What the thread posts back for a search. */
export type ThreadAnswer =
  { ready: true } | { page: SearchPage } | { error: { message: string; code?: string } };

interface Job {
  clientId: number;
  statements: PageStatements;
  limit: number;
  arrival: number;
  resolve(page: SearchPage): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
}

export interface SearchThread {
  /** The page of `statements`, read on the thread in one read transaction. */
  run(clientId: number, statements: PageStatements, limit: number): Promise<SearchPage>;
  /** Fails what waits or runs, and lets the thread go. */
  close(): void;
}

/**
 * One thread, with its own read-only connection to the SQLite file at `file` (WAL: it never blocks a writer),
 * that reads the pages of searches whose cost the plan cannot bound, so that the event loop of the process goes
 * on meanwhile. Started at the first such search and let go after an idle while. It reads one search at a time;
 * the next is the oldest of the client served least recently, so that a client with many waiting cannot keep
 * another's behind all of them. One thread reads at a time: a second would hold a second connection's cache and heap,
 * and the machine's cores are the web's and the workers'. A thread whose search was given up on is terminated and
 * replaced, but lives on until its statement ends: at most SEARCH_THREADS_MAX live at once, whatever clients do.
 */
export function searchThread(file: string, options: SearchThreadOptions): SearchThread {
  const idleMs = options.idleMs ?? SEARCH_THREAD_IDLE_MS;
  /** Each client's waiting searches, in arrival order. */
  const waiting = new Map<number, Job[]>();
  /** When each client with a search waiting or running was last served (a count of searches begun). */
  const lastServed = new Map<number, number>();
  let arrivals = 0;
  let turns = 0;
  let running: Job | undefined;
  let thread: Worker | undefined;
  /** Threads let go that have not ended yet: each may still be finishing a statement given up on. */
  const leaving = new Set<Worker>();
  /** Whether the thread has opened its connection: a search's run is timed from then. */
  let ready = false;
  let idle: NodeJS.Timeout | undefined;
  let closed = false;

  function next(): void {
    if (running || closed) return;
    // Every thread is still finishing a search given up on: the first to end starts the next.
    if (!thread && leaving.size >= SEARCH_THREADS_MAX) return;
    const job = pick();
    if (!job) {
      if (thread && !idle) idle = setTimeout(letGo, idleMs).unref();
      return;
    }
    clearTimeout(idle);
    idle = undefined;
    running = job;
    lastServed.set(job.clientId, ++turns);
    clearTimeout(job.timer);
    thread ??= start();
    thread.postMessage({ statements: job.statements, limit: job.limit });
    if (ready) deadline(job);
    else if (options.timeoutMs > 0) job.timer = setTimeout(() => expire(job), THREAD_START_MS);
  }

  function deadline(job: Job): void {
    if (options.timeoutMs > 0) job.timer = setTimeout(() => expire(job), options.timeoutMs);
  }

  /** The oldest search of the client served least recently (never: first), by arrival among equals. */
  function pick(): Job | undefined {
    let best: Job[] | undefined;
    let bestRank: [number, number] = [Infinity, Infinity];
    for (const [clientId, jobs] of waiting) {
      const rank: [number, number] = [lastServed.get(clientId) ?? 0, jobs[0]!.arrival];
      if (rank[0] < bestRank[0] || (rank[0] === bestRank[0] && rank[1] < bestRank[1])) {
        best = jobs;
        bestRank = rank;
      }
    }
    const job = best?.shift();
    if (job && best!.length === 0) waiting.delete(job.clientId);
    return job;
  }

  function start(): Worker {
    const [entry, how] = threadEntry();
    const worker = new Worker(entry, {
      ...how,
      workerData: { file, gate: options.gate },
      // None of the process's own arguments: the Procfile preloads tracing, which a thread of reads does not need.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
    worker.unref();
    ready = false;
    worker.on('message', (answer: ThreadAnswer) => {
      if (worker !== thread) return;
      if ('ready' in answer) {
        ready = true;
        clearTimeout(running?.timer);
        if (running) deadline(running);
        return;
      }
      if (!running) return;
      const job = finish();
      if ('page' in answer) job.resolve(answer.page);
      else job.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }));
      next();
    });
    // A thread that stops (out of memory, its file missing, a crash) fails its search only; the next gets a new one.
    const stopped = (err: Error) => {
      if (worker !== thread) return;
      thread = undefined;
      void worker.terminate();
      if (running) finish().reject(new Error(`the search thread stopped: ${err.message}`, { cause: err }));
      next();
    };
    worker.on('error', stopped);
    worker.on('exit', (code) => {
      if (leaving.delete(worker)) next();
      else stopped(new Error(`it exited with code ${code}`));
    });
    return worker;
  }

  function finish(): Job {
    const job = running!;
    running = undefined;
    clearTimeout(job.timer);
    if (!waiting.has(job.clientId)) lastServed.delete(job.clientId);
    return job;
  }

  /** Past its deadline: a waiting search leaves the queue; a running one leaves its thread, which is replaced. */
  function expire(job: Job): void {
    if (job === running) {
      finish();
      letGo();
    } else {
      const jobs = waiting.get(job.clientId) ?? [];
      jobs.splice(jobs.indexOf(job), 1);
      if (jobs.length === 0) {
        waiting.delete(job.clientId);
        if (running?.clientId !== job.clientId) lastServed.delete(job.clientId);
      }
    }
    job.reject(new SearchTimeoutError(options.timeoutMs));
    next();
  }

  /**
   * Terminates the thread without waiting for it: a statement in progress ends only when its native step returns,
   * and the next search starts on a new thread meanwhile, unless SEARCH_THREADS_MAX threads still live.
   */
  function letGo(): void {
    clearTimeout(idle);
    idle = undefined;
    const worker = thread;
    thread = undefined;
    if (!worker) return;
    leaving.add(worker);
    void worker.terminate();
  }

  return {
    run(clientId, statements, limit) {
      if (closed) return Promise.reject(new Error('the store is closed'));
      return new Promise<SearchPage>((resolve, reject) => {
        const job: Job = { clientId, statements, limit, arrival: ++arrivals, resolve, reject };
        deadline(job);
        const jobs = waiting.get(clientId);
        if (jobs) jobs.push(job);
        else waiting.set(clientId, [job]);
        next();
      });
    },
    close() {
      closed = true;
      const left = [...(running ? [running] : []), ...[...waiting.values()].flat()];
      running = undefined;
      waiting.clear();
      lastServed.clear();
      for (const job of left) {
        clearTimeout(job.timer);
        job.reject(new Error('the store is closed'));
      }
      letGo();
    },
  };
}
