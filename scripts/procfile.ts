// The Procfile is the one statement of how each process runs (its Node flags and compiled entry): `npm start`
// and the benchmarks read it rather than repeating it.
import fs from 'node:fs';
import path from 'node:path';

/** Each Procfile process: its name and Node's arguments (flags, then the compiled entry under dist/). */
export function readProcfile(root: string): Record<string, string[]> {
  const processes: Record<string, string[]> = {};
  for (const line of fs.readFileSync(path.join(root, 'Procfile'), 'utf8').split('\n')) {
    const match = /^([\w-]+):\s*node\s+(.+)$/.exec(line.trim());
    if (match) processes[match[1]!] = match[2]!.split(/\s+/);
  }
  return processes;
}

/** The compiled entry of a Procfile command, e.g. dist/src/server.js. */
export function compiledEntry(args: string[]): string {
  const entry = args.at(-1);
  if (!entry?.startsWith('dist/')) throw new Error(`Procfile: '${args.join(' ')}' does not end in dist/…`);
  return entry;
}

/**
 * The same process run from source through tsx: the compiled entry becomes its TypeScript source (tsx maps
 * its own stack traces); the V8 flags stay, and a module preloaded from dist/ (`--import=./dist/….js`, the
 * tracing) is preloaded from its source, after tsx.
 */
export function fromSource(args: string[]): string[] {
  const source = compiledEntry(args).slice('dist/'.length).replace(/\.js$/, '.ts');
  const flags = args.slice(0, -1).filter((flag) => flag !== '--enable-source-maps');
  const preloads = flags.filter((flag) => flag.startsWith('--import=./dist/'));
  const fromDist = (flag: string) => [
    '--import',
    `./${flag.slice('--import=./dist/'.length).replace(/\.js$/, '.ts')}`,
  ];
  return [
    ...flags.filter((flag) => !preloads.includes(flag)),
    '--import',
    'tsx',
    ...preloads.flatMap(fromDist),
    source,
  ];
}
