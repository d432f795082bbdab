import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ensurePrivateDir, touchPrivateFile } from '../secrets/private-files.js';

/** What a backup wrote: its file, its size, and the orders it holds. */
export interface SqliteBackup {
  path: string;
  bytes: number;
  orders: number;
}

/**
 * A consistent copy of the live store at `dbPath` written to `to` while web and workers write: `VACUUM INTO` a
 * file beside `to` (one read transaction, so one instant of the store, and in WAL mode it holds no writer back,
 * unlike the online backup API, which starts again whenever another connection writes), checked whole with
 * `integrity_check`, made durable, then renamed over `to`. The copy is 0600: it holds the sealed secret keys. It
 * does not hold SECRETS_KEY (secrets.key beside the store, or the variable), without which they cannot be read.
 */
export function backupSqlite(dbPath: string, to: string, busyTimeoutMs = 10_000): SqliteBackup {
  const target = path.resolve(to);
  if (path.resolve(dbPath) === target) throw new Error(`--to ${to} is the live store itself`);
  ensurePrivateDir(path.dirname(target));
  const tmp = `${target}.${process.pid}-${crypto.randomBytes(4).toString('hex')}.tmp`;
  // VACUUM INTO writes into an empty file as it finds it: made 0600 first, the copy is never readable by others.
  touchPrivateFile(tmp);
  try {
    const live = new Database(dbPath, { fileMustExist: true });
    try {
      live.pragma(`busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
      live.prepare('VACUUM INTO ?').run(tmp);
    } finally {
      live.close();
    }
    const orders = checkCopy(tmp);
    const fd = fs.openSync(tmp, 'r+');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, target);
    syncFolder(path.dirname(target));
    return { path: target, bytes: fs.statSync(target).size, orders };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** The copy's order count, once SQLite has read every page of it and found it whole. */
function checkCopy(file: string): number {
  const copy = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const problems = copy.pragma('integrity_check', { simple: false }) as { integrity_check: string }[];
    const found = problems.map((row) => row.integrity_check).filter((line) => line !== 'ok');
    if (found.length > 0)
      throw new Error(`the copy failed its integrity check: ${found.slice(0, 5).join('; ')}`);
    return copy.prepare<[], number>('SELECT count(*) FROM orders').pluck().get() ?? 0;
  } finally {
    copy.close();
  }
}

function syncFolder(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
