// A release already out there, to run beside the tree under test (test/deploy): the files of a pinned commit of
// this repository, with their node_modules, made once and kept under the user's cache (outside the clone, so a
// fresh clone, as CI's, finds it again), one directory per commit. Two test files asking at once take turns on a
// lock; the first makes it, the second finds it made.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { holdLock } from './start-lock.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The release before this one (main as it landed on 2026-12-07): it drains its webs on SIGTERM, as this one does,
 * and speaks protocol 1 (its webs hear an order's end by the message's first word).
 */
export const PREVIOUS_RELEASE = 'eb58d27';
/** The release of 2026-11-28, the last whose webs close their kept-alive connections at once on SIGTERM (no drain). */
export const RELEASE_2026_11_28 = '6dbff14';
/** The release of 2026-11-27, whose SQLite reads split `SELECT o.*, i.*` rows by position. */
export const RELEASE_2026_11_27 = 'ab69f1c';

/** The file of `release`'s settings (relative to it): src/config.ts before they moved into src/config/. */
export function configFileOf(release: string): string {
  return fs.existsSync(path.join(release, 'src/config/config.ts')) ? 'src/config/config.ts' : 'src/config.ts';
}

/** Where releases are kept: `${XDG_CACHE_HOME:-~/.cache}/bookorders/releases`. */
export function releasesDir(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cache, 'bookorders', 'releases');
}

function git(...args: string[]): string {
  return execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();
}

/** The full id of `commit`, or a message saying how to get it (a shallow clone lacks the history). */
function resolveCommit(commit: string): string {
  try {
    return git('rev-parse', '--verify', '--quiet', `${commit}^{commit}`);
  } catch {
    throw new Error(
      `release ${commit} is not in this clone's history: clone with full history, or \`git fetch --unshallow\``,
    );
  }
}

/**
 * The directory of the release at `commit`, ready to run (`spawnProcess(…, { root })`): made on first use. Its
 * node_modules are this tree's when the release's package-lock.json is the same (linked again at each use, as the
 * clone may have moved), else its own, installed once from its lock.
 */
export async function previousRelease(commit: string): Promise<string> {
  const id = resolveCommit(commit);
  const dir = path.join(releasesDir(), id);
  fs.mkdirSync(releasesDir(), { recursive: true });
  const release = await holdLock(`${dir}.lock`, 15 * 60_000);
  try {
    const extracted = path.join(dir, '.extracted');
    if (!fs.existsSync(extracted)) {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir);
      extract(id, dir);
      fs.writeFileSync(extracted, `${id}\n`);
    }
    if (sameLock(dir)) linkModules(dir);
    else install(dir);
    return dir;
  } finally {
    release();
  }
}

/** The commit's files, as `git archive` gives them (no .git: nothing ties the copy to this clone). */
function extract(id: string, dir: string): void {
  const archive = spawnSync('git', ['-C', ROOT, 'archive', '--format=tar', id], {
    maxBuffer: 1 << 30,
  });
  if (archive.status !== 0) throw new Error(`git archive ${id}: ${archive.stderr.toString()}`);
  const tar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (tar.status !== 0) throw new Error(`tar -x into ${dir}: ${tar.stderr.toString()}`);
}

function sameLock(dir: string): boolean {
  const ours = path.join(ROOT, 'package-lock.json');
  const theirs = path.join(dir, 'package-lock.json');
  return (
    fs.existsSync(path.join(ROOT, 'node_modules')) && fs.readFileSync(ours).equals(fs.readFileSync(theirs))
  );
}

function linkModules(dir: string): void {
  const link = path.join(dir, 'node_modules');
  const target = fs.realpathSync(path.join(ROOT, 'node_modules'));
  const current = fs.lstatSync(link, { throwIfNoEntry: false });
  if (current?.isSymbolicLink() && fs.readlinkSync(link) === target) return;
  fs.rmSync(link, { recursive: true, force: true });
  fs.symlinkSync(target, link, 'dir');
}

/** `npm ci` from the release's own lock, once (native modules built: better-sqlite3 takes about a minute). */
function install(dir: string): void {
  const installed = path.join(dir, '.installed');
  if (fs.existsSync(installed) && !fs.lstatSync(path.join(dir, 'node_modules')).isSymbolicLink()) return;
  fs.rmSync(path.join(dir, 'node_modules'), { recursive: true, force: true });
  const run = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 14 * 60_000,
  });
  if (run.status !== 0)
    throw new Error(`npm ci in ${dir} failed (${run.status}):\n${run.stdout}\n${run.stderr}`);
  fs.writeFileSync(installed, '');
}
