import fs from 'node:fs';
import path from 'node:path';

/** BENCHMARKS.md at the project's root, wherever a bench is run from. */
export const BENCHMARKS_FILE = path.resolve(import.meta.dirname, '../../BENCHMARKS.md');

/**
 * Replaces (or appends) the `## title` section of BENCHMARKS.md whole, its `###` parts included, leaving the
 * others as they are: the file holds each area's current figures only, as its bench last wrote them (`--write`).
 */
export function writeSection(title: string, body: string, file: string = BENCHMARKS_FILE): void {
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const heading = `## ${title}`;
  const start = current.indexOf(`${heading}\n`);
  const text = `${heading}\n\n${body.trim()}\n`;
  if (start === -1) {
    fs.writeFileSync(file, `${current.trimEnd()}\n\n${text}`);
    return;
  }
  const next = current.indexOf('\n## ', start + heading.length);
  const end = next === -1 ? current.length : next + 1;
  fs.writeFileSync(file, `${current.slice(0, start)}${text}${next === -1 ? '' : '\n'}${current.slice(end)}`);
}

/** Prints a bench's section and, asked to (`--write`), replaces its `## title` section of BENCHMARKS.md with it. */
export function printSection(title: string, body: string, write: boolean): void {
  process.stdout.write(`${body}\n`);
  if (write) writeSection(title, body);
}
