// The flush of SQLite's log off the event loop: commits share a flush, one made while a flush runs waits for the
// next, a failed flush fails every waiter and every later one, and the descriptor follows the file.
import { describe, expect, it } from 'vitest';
import { walFlusher, type WalFs } from '../../src/store/sqlite/wal-flusher.js';

/** A file system whose fdatasyncs wait until the test ends them, one by one, in order. */
function fakeFs() {
  const syncs: { fd: number; end: (err?: Error) => void }[] = [];
  const opened: string[] = [];
  const closed: number[] = [];
  let pathIno: number | null = 1;
  let nextFd = 10;
  const inoOfFd = new Map<number, number>();
  const fs: WalFs = {
    async open(path) {
      if (pathIno === null)
        throw Object.assign(new Error(`ENOENT: no such file, open '${path}'`), { code: 'ENOENT' });
      opened.push(path);
      const fd = nextFd++;
      inoOfFd.set(fd, pathIno!);
      return fd;
    },
    fdatasync: (fd) =>
      new Promise((resolve, reject) => syncs.push({ fd, end: (err) => (err ? reject(err) : resolve()) })),
    async close(fd) {
      closed.push(fd);
    },
    async fstatIno(fd) {
      return inoOfFd.get(fd)!;
    },
    statIno: () => pathIno,
  };
  return {
    fs,
    syncs,
    opened,
    closed,
    /** The log file is replaced by a new one (another inode), or removed (null). */
    replaceFile: (ino: number | null) => void (pathIno = ino),
    /** Lets the oldest fdatasync still running return (or fail). */
    async endSync(err?: Error) {
      await settle();
      const sync = syncs.shift();
      if (!sync) throw new Error('no fdatasync is running');
      sync.end(err);
      await settle();
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A connection whose mark moves with each commit. */
function connection() {
  let commits = 0;
  return { commit: () => void commits++, mark: () => String(commits) };
}

/** Whether the promise has settled, and how. */
function watch(promise: Promise<void>) {
  const state = { done: false, err: null as unknown };
  promise.then(
    () => void (state.done = true),
    (err: unknown) => {
      state.done = true;
      state.err = err;
    },
  );
  return state;
}

/** A flusher of `/db-wal` on a fake file system, for a connection whose commits the test makes. */
function setup() {
  const disk = fakeFs();
  const db = connection();
  const failures: unknown[] = [];
  const flusher = walFlusher('/db-wal', {
    mark: db.mark,
    onFailure: (err) => failures.push(err),
    fs: disk.fs,
  });
  return { disk, db, failures, flusher };
}

describe('the flush of the write-ahead log', () => {
  it('flushes once for every commit made before it began, however many wait', async () => {
    const { disk, db, flusher } = setup();
    for (let i = 0; i < 10; i++) db.commit();
    const waiters = Array.from({ length: 10 }, () => watch(flusher.flushed()));
    await settle();
    expect(disk.syncs).toHaveLength(1);
    expect(waiters.some((w) => w.done)).toBe(false);
    await disk.endSync();
    expect(waiters.every((w) => w.done && w.err === null)).toBe(true);
    expect(disk.syncs).toHaveLength(0);
  });

  it('makes a commit made while a flush runs wait for the next one, shared by all such commits', async () => {
    const { disk, db, flusher } = setup();
    db.commit();
    const first = watch(flusher.flushed());
    await settle();
    db.commit();
    const second = watch(flusher.flushed());
    db.commit();
    const third = watch(flusher.flushed());
    await disk.endSync();
    expect(first.done).toBe(true);
    expect(second.done || third.done).toBe(false);
    expect(disk.syncs).toHaveLength(1);
    await disk.endSync();
    expect(second.done && third.done).toBe(true);
  });

  it('does not flush again when nothing was committed since the last flush began, and waits for it while it runs', async () => {
    const { disk, db, flusher } = setup();
    db.commit();
    const first = watch(flusher.flushed());
    const read = watch(flusher.flushed());
    await settle();
    expect(read.done).toBe(false);
    await disk.endSync();
    expect(first.done && read.done).toBe(true);
    await flusher.flushed();
    expect(disk.syncs).toHaveLength(0);
  });

  it('fails every waiter when fdatasync fails, calls onFailure once, and fails every later flush without trying', async () => {
    const { disk, db, failures, flusher } = setup();
    db.commit();
    const running = watch(flusher.flushed());
    await settle();
    db.commit();
    const waiting = watch(flusher.flushed());
    const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    await disk.endSync(eio);
    expect(running.err).toBe(eio);
    expect(waiting.err).toBe(eio);
    expect(failures).toEqual([eio]);
    // A second fdatasync could succeed with the frames gone (the kernel reports the error once): never trusted.
    await expect(flusher.flushed()).rejects.toBe(eio);
    db.commit();
    await expect(flusher.flushed()).rejects.toBe(eio);
    expect(disk.syncs).toHaveLength(0);
    expect(failures).toHaveLength(1);
  });

  it('opens the log file again when the path names another file than the one it holds', async () => {
    const { disk, db, flusher } = setup();
    db.commit();
    const first = flusher.flushed();
    await disk.endSync();
    await first;
    disk.replaceFile(2);
    db.commit();
    const second = flusher.flushed();
    await settle();
    expect(disk.syncs.map((s) => s.fd)).toEqual([11]);
    await disk.endSync();
    await second;
    expect(disk.opened).toEqual(['/db-wal', '/db-wal']);
    expect(disk.closed).toEqual([10]);
    await flusher.close();
    expect(disk.closed).toEqual([10, 11]);
  });

  it('fails when the log file is gone (it cannot be while the connection is open): nothing is taken as flushed', async () => {
    const { disk, db, failures, flusher } = setup();
    disk.replaceFile(null);
    db.commit();
    await expect(flusher.flushed()).rejects.toMatchObject({ code: 'ENOENT' });
    expect(failures).toHaveLength(1);
  });
});
