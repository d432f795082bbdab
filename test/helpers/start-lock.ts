// `npm start` writes data/runtime.json in the checkout, one per checkout: two test files that run it at once
// would aim each other's operator commands at the wrong service. Each holds this lock while it runs npm start.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sleep } from './wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LOCK = path.join(os.tmpdir(), `bookorders-npm-start-${ROOT.replace(/[^A-Za-z0-9]+/g, '_')}.lock`);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Waits for the checkout's npm start lock (a holder that died leaves it free); returns its release. */
export function holdStartLock(waitMs = 600_000): Promise<() => void> {
  return holdLock(LOCK, waitMs);
}

/** Waits for the lock file `file` (taken by writing our pid; a holder that died leaves it free); returns its release. */
export async function holdLock(file: string, waitMs: number): Promise<() => void> {
  for (const deadline = Date.now() + waitMs; ; await sleep(500)) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(fs.readFileSync(file, 'utf8').trim() || 0);
    if (holder > 0 && !alive(holder)) fs.rmSync(file, { force: true });
    else if (Date.now() > deadline) throw new Error(`${file} still held by ${holder}`);
  }
}
