import fs from 'node:fs';

/**
 * The flush of SQLite's write-ahead log, off the event loop, so that a commit's fdatasync never stalls the thread that answers. The connection commits with
 * `synchronous = NORMAL`: a commit writes its frames into the log (the page cache) and returns, unflushed; the
 * store's promise for it resolves only after an `fdatasync` of the `-wal` file, run on libuv's thread pool, that
 * began after the commit. One flush covers every frame written to the file before it began, by this process or
 * another (fdatasync flushes the file, not a descriptor's writes), so every commit made before a flush starts
 * shares it, and a commit made while one runs waits for the next: at most one flush runs, and one waits.
 *
 * Why the result is still durable:
 * - SQLite's recovery keeps the longest run of frames whose cumulative checksums hold, up to a commit frame
 *   (wal.c): a commit can be lost only with every commit after it. A flush that returned made all earlier frames
 *   durable, so what was answered after it survives a power cut, as with FULL.
 * - Checkpoints: with NORMAL, SQLite still syncs the log before copying it into the database file and syncs the
 *   file after (the commit of a worker or the clock that crosses WORKER_CHECKPOINT_PAGES runs it, in its event
 *   loop, as before). A log restarted after a checkpoint (new salts, written from the start), truncated
 *   (`wal_checkpoint(TRUNCATE)`, after a key rotation) or cut to `journal_size_limit` (not set: SQLite's default
 *   keeps the file) is the same file: the descriptor stays right. The file is deleted only when the last
 *   connection closes, after a checkpoint of all of it into a synced database file; that cannot happen while this
 *   connection is open, but a flush compares the path's inode with the descriptor's anyway and opens the new file
 *   when it differs (what the old one held is in the database file then); a log that is missing fails the flush.
 *   The path is SQLite's own name for the database (links resolved), as the log sits beside the file itself.
 * - Visible before durable: SQLite writes a commit's frames, syncs them when synchronous is FULL, and only then
 *   publishes the commit in the wal-index header (walFrames in wal.c). With NORMAL another process can read a
 *   commit before its writer's flush. So the store flushes before answering from a read too, when something was
 *   committed since its last flush began (`PRAGMA data_version` for other connections, `total_changes()` for its
 *   own: about 2 µs; an fdatasync only when it moved, tens of µs when the writer has flushed already): nothing this
 *   process answers, sends or pays a processor outside the store for can rest on a commit a power cut would take
 *   back (flushed-store.ts). The one thing enqueued before its commit's flush is an accepted order's job, which
 *   only names the order: the worker that takes it flushes before it pays such a processor or announces anything
 *   (OrderStore.accept, ProcessingStore). Only a reader outside the service (the sqlite3 shell) can still see an
 *   unflushed commit.
 * - A failed fdatasync (EIO; ENOSPC or EDQUOT where the file system allocates at write-back): Linux may have
 *   dropped the dirty pages and reports the error once, so a second fdatasync can succeed with the frames lost
 *   ("fsyncgate"). Every waiter fails (nothing is answered as done), every later flush fails with the same error,
 *   and `onFailure` is called: the store's stops the process (crash-only; recovery at the restart replays the log
 *   that is really on the disk), as PostgreSQL does on a failed fsync. Linux reports the error to every open
 *   description of the file, so the other processes' next flushes fail and they stop too. A full disk shows first
 *   as SQLITE_FULL at the commit's write (ext4 reserves blocks at write()), which is "unavailable" and not this.
 */
export interface WalFlusher {
  /**
   * Resolves once every commit this connection can see now is on the disk: at once when nothing was committed
   * since the last flush began and that flush is done, else after the flush running (when it began after) or the
   * next one. Rejects, for ever after, once a flush failed.
   */
  flushed(): Promise<void>;
  /** Waits for the flushes asked for, then closes the log's descriptor. */
  close(): Promise<void>;
}

/** The file calls a flusher makes, for a test to stand in for. */
export interface WalFs {
  open(path: string): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  close(fd: number): Promise<void>;
  /** The inode of an open descriptor, and of a path (null when there is no such file). */
  fstatIno(fd: number): Promise<number>;
  statIno(path: string): number | null;
}

export const nodeWalFs: WalFs = {
  // A plain descriptor: a FileHandle's would be closed when the handle is garbage-collected.
  open: (path) =>
    new Promise((resolve, reject) => fs.open(path, 'r', (err, fd) => (err ? reject(err) : resolve(fd)))),
  fdatasync: (fd) =>
    new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve()))),
  close: (fd) => new Promise((resolve, reject) => fs.close(fd, (err) => (err ? reject(err) : resolve()))),
  fstatIno: (fd) =>
    new Promise((resolve, reject) => fs.fstat(fd, (err, st) => (err ? reject(err) : resolve(st.ino)))),
  statIno: (path) => fs.statSync(path, { throwIfNoEntry: false })?.ino ?? null,
};

export interface WalFlusherOptions {
  /** What this connection has seen committed: changes whenever a commit (its own or another's) became visible. */
  mark: () => string;
  /** Called once, with the error, when a flush fails. */
  onFailure: (err: unknown) => void;
  fs?: WalFs;
}

interface Flush {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const deferred = (): Flush => {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A flush nobody waits for (close after a failure) must not be an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
};

/** The flusher of the log at `walPath` (the database's path + `-wal`). */
export function walFlusher(walPath: string, options: WalFlusherOptions): WalFlusher {
  const files = options.fs ?? nodeWalFs;
  let fd: number | null = null;
  let ino: number | null = null;
  let failed: { err: unknown } | null = null;
  let running: Flush | null = null;
  let next: Flush | null = null;
  // What was visible when the last flush began (null before the first).
  let coveredMark: string | null = null;

  // The descriptor of the file the path names now; a missing log fails the flush (open's ENOENT): it cannot be
  // removed while this connection is open, so something else is wrong.
  const current = async (): Promise<number> => {
    const pathIno = files.statIno(walPath);
    if (fd !== null && pathIno === ino) return fd;
    if (fd !== null) await files.close(fd);
    fd = null;
    const opened = await files.open(walPath);
    fd = opened;
    ino = await files.fstatIno(opened);
    return opened;
  };

  const start = (flush: Flush) => {
    running = flush;
    coveredMark = options.mark();
    current()
      .then((file) => files.fdatasync(file))
      .then(
        () => {
          running = null;
          flush.resolve();
          if (next) {
            const waiting = next;
            next = null;
            start(waiting);
          }
        },
        (err: unknown) => fail(flush, err),
      );
  };

  const fail = (flush: Flush, err: unknown) => {
    failed = { err };
    running = null;
    flush.reject(err);
    next?.reject(err);
    next = null;
    options.onFailure(err);
  };

  return {
    flushed() {
      if (failed) return Promise.reject(failed.err);
      if (options.mark() === coveredMark) return running?.promise ?? Promise.resolve();
      if (!running) {
        const flush = deferred();
        start(flush);
        return flush.promise;
      }
      next ??= deferred();
      return next.promise;
    },
    async close() {
      await (next ?? running)?.promise.catch(() => {});
      if (fd !== null) await files.close(fd);
      fd = null;
    },
  };
}
