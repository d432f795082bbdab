// BENCHMARKS.md holds each area's current figures only, as its bench wrote them with `--write`: a notebook of
// sittings (dated runs, before/after tables, which issue asked) belongs in commit messages, not in the file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BENCHMARKS_FILE, writeSection } from '../../scripts/bench/benchmarks-file.js';

const text = fs.readFileSync(BENCHMARKS_FILE, 'utf8');
const lines = text.split('\n');
const offending = (pattern: RegExp) => lines.filter((line) => pattern.test(line));

describe('BENCHMARKS.md', () => {
  it('when read, then it is under 600 lines', () => {
    expect(lines.length).toBeLessThan(600);
  });

  it('when read, then no line dates a sitting', () => {
    expect(offending(/\b20\d\d-[01]\d-[0-3]\d\b|\b(Retaken|Newest)\b/)).toEqual([]);
  });

  it('when read, then no line names an issue', () => {
    expect(offending(/\bissues? #?\d+/i)).toEqual([]);
  });

  it('when read, then no line holds a path of the machine it ran on', () => {
    expect(offending(/(^|[\s`'"(=])\/(work|tmp|home|Users|root|var|opt|mnt)\//)).toEqual([]);
  });

  it('when read, then each area is one section, under a title no other section has', () => {
    const titles = lines.filter((line) => line.startsWith('## '));
    expect(titles.length).toBeGreaterThan(0);
    expect(new Set(titles).size).toBe(titles.length);
  });
});

describe('writeSection', () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'benchmarks-')), 'BENCHMARKS.md');

  it('when an area is written again, then its section is replaced whole, parts included, and the others kept', () => {
    fs.writeFileSync(file, '# Benchmarks\n\n## A\n\nold a\n\n### part\n\nold part\n\n## B\n\nb stays\n');
    writeSection('A', 'new a', file);
    expect(fs.readFileSync(file, 'utf8')).toBe('# Benchmarks\n\n## A\n\nnew a\n\n## B\n\nb stays\n');
  });

  it('when an area is new, then its section is added at the end', () => {
    writeSection('C', 'c\n', file);
    expect(fs.readFileSync(file, 'utf8')).toBe(
      '# Benchmarks\n\n## A\n\nnew a\n\n## B\n\nb stays\n\n## C\n\nc\n',
    );
  });
});
