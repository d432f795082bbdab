// Files only this user may read: the SQLite database (and its -wal/-shm), the generated secrets.key.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;

/** Creates `dir` and missing parents, readable by this user only; an existing folder is left as it is. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
}

/**
 * Narrows `file` to 0600 (a folder to 0700) when it exists with more (files written by older versions were 0644,
 * folders 0755).
 */
export function restrictToOwner(file: string): void {
  let mode: number;
  try {
    mode = fs.statSync(file).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const isDir = (mode & fs.constants.S_IFMT) === fs.constants.S_IFDIR;
  if ((mode & 0o077) !== 0) fs.chmodSync(file, isDir ? PRIVATE_DIR : PRIVATE_FILE);
}

/** Creates `file` empty and 0600 unless it exists; its folder is created 0700 when missing. */
export function touchPrivateFile(file: string): void {
  ensurePrivateDir(path.dirname(file));
  fs.closeSync(fs.openSync(file, 'a', PRIVATE_FILE));
}

/**
 * Writes `content` into `file` (0600) all at once, durable before it returns: a reader never sees it half
 * written. Without `replace` it writes only when `file` is absent, so processes starting at once agree on
 * one content; returns whether it wrote.
 */
export function writePrivateFile(file: string, content: string, { replace = false } = {}): boolean {
  const dir = path.dirname(file);
  ensurePrivateDir(dir);
  const tmp = `${file}.${process.pid}-${crypto.randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', PRIVATE_FILE);
  try {
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    // link() fails when the name exists, where rename() would replace it.
    if (replace) fs.renameSync(tmp, file);
    else fs.linkSync(tmp, file);
  } catch (err) {
    if (!replace && (err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  const dirFd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
  return true;
}
