// The Procfile states how each process runs; `npm run web|worker|clock` must run exactly that, and its
// development form (`npm run dev`) the same flags on the TypeScript source.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compiledEntry, fromSource, readProcfile } from '../../scripts/procfile.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the Procfile', () => {
  const procfile = readProcfile(ROOT);

  it('names web, worker and clock, each plain Node on a compiled entry under dist/', () => {
    expect(Object.keys(procfile).sort()).toEqual(['clock', 'web', 'worker']);
    for (const args of Object.values(procfile)) {
      expect(compiledEntry(args)).toMatch(/^dist\/.+\.js$/);
      expect(args).toContain('--enable-source-maps');
    }
  });

  it('is what npm run web, worker and clock run', () => {
    const scripts = (
      JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    for (const [name, args] of Object.entries(procfile)) expect(scripts[name]).toBe(`node ${args.join(' ')}`);
  });

  it('when run from source, then the entry is the TypeScript file through tsx and the V8 flags stay', () => {
    expect(fromSource(['--enable-source-maps', '--max-semi-space-size=4', 'dist/src/server.js'])).toEqual([
      '--max-semi-space-size=4',
      '--import',
      'tsx',
      'src/server.ts',
    ]);
  });

  it('when a process preloads a module from dist/ (the tracing), then from source it preloads its TypeScript after tsx', () => {
    expect(
      fromSource([
        '--enable-source-maps',
        '--import=./dist/src/tracing/preload.js',
        '--max-semi-space-size=1',
        'dist/jobs/clock.js',
      ]),
    ).toEqual([
      '--max-semi-space-size=1',
      '--import',
      'tsx',
      '--import',
      './src/tracing/preload.ts',
      'jobs/clock.ts',
    ]);
    for (const args of Object.values(procfile))
      expect(args).toContain('--import=./dist/src/tracing/preload.js');
  });
});
