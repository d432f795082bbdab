import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The house's import rules, read from the source itself: no dependency-cruiser or madge, since a page of code
// does it and runs with the unit tests in `npm test`.
const root = path.resolve(import.meta.dirname, '../..');
const src = path.join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

interface Import {
  to: string;
  /** `import type`/`export type`: erased when compiled, so it cannot make a cycle at run time. */
  typeOnly: boolean;
}

/** A module a file names, and whether only its types are imported. */
interface Specifier {
  spec: string;
  /** `import type`/`export type`: erased when compiled, so nothing of it runs. */
  typeOnly: boolean;
}

/** Every module `text` imports, in each form: static imports and re-exports, bare imports, dynamic imports. */
function specifiersOf(text: string): Specifier[] {
  return [
    ...[...text.matchAll(/^\s*(?:import|export)\s+(type\s)?[^;]*?\bfrom\s+['"]([^'"]+)['"]/gm)].map((m) => ({
      spec: m[2]!,
      typeOnly: Boolean(m[1]),
    })),
    ...[...text.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => ({
      spec: m[1]!,
      typeOnly: false,
    })),
    ...[...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)].map((m) => ({ spec: m[1]!, typeOnly: false })),
  ];
}

/** Every relative module a file imports (static, re-exports and dynamic), as absolute .ts paths. */
function importsOf(file: string): Import[] {
  return specifiersOf(readFileSync(file, 'utf8'))
    .filter(({ spec }) => /^\.{1,2}\//.test(spec) && spec.endsWith('.js'))
    .map(({ spec, typeOnly }) => ({
      to: path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'),
      typeOnly,
    }));
}

/** Whether `text` imports one of `packages` (or a file inside one) in a way that runs when compiled. */
function importsThatRun(text: string, packages: readonly string[]): boolean {
  return specifiersOf(text).some(
    ({ spec, typeOnly }) =>
      !typeOnly && packages.some((name) => spec === name || spec.startsWith(`${name}/`)),
  );
}

const files = sourceFiles(src);
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const rel = (file: string) => path.relative(src, file);

// The house from the ground up: each room's code may run code of its own room and of the floors below, never of
// a floor above. Rooms side by side on one floor do not import each other either. config is the ground floor;
// the process room, which composes everything (src/container.ts), is the top below the entry files.
const FLOORS: string[][] = [
  ['config'],
  ['domain', 'auth', 'logger.ts', 'tracing', 'group-calls.ts', 'server-changes.ts', 'bounded-stop.ts'],
  ['store', 'redis', 'queue', 'payments', 'webhooks', 'client'],
  ['metrics'],
  ['services'],
  ['http'],
  ['deps.ts', 'container.ts'],
  ['processes'],
  ['cli', 'server.ts'],
];
/** A file's room: the folder under src/ it is in, or the file itself at the root. */
const roomOf = (file: string) => rel(file).split(path.sep)[0]!;
const floorOf = (file: string) => FLOORS.findIndex((rooms) => rooms.includes(roomOf(file)));

/** Imports that run (type-only ones are erased), from one room to another, as `from -> to`. */
const valueImportsBetweenRooms = files.flatMap((file) =>
  graph
    .get(file)!
    .filter(({ to, typeOnly }) => !typeOnly && graph.has(to) && roomOf(to) !== roomOf(file))
    .map(({ to }) => ({ from: file, to, arrow: `${rel(file)} -> ${rel(to)}` })),
);

/** Whether a file is inside a folder of src/ (`store/port`). */
const inside = (file: string, folder: string) => rel(file).startsWith(`${folder}${path.sep}`);

/** Every import, type-only ones too, from a file inside one folder of src/ to a file inside another. */
const importsBetween = (from: string, to: string) =>
  files
    .filter((file) => inside(file, from))
    .flatMap((file) =>
      graph
        .get(file)!
        .filter((i) => inside(i.to, to))
        .map((i) => `${rel(file)} -> ${rel(i.to)}`),
    );

describe('architecture', () => {
  it('finds the source files and their imports', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get(path.join(src, 'deps.ts'))?.length).toBeGreaterThan(0);
  });

  it('places every room of src/ on a floor of the house', () => {
    expect(files.filter((file) => floorOf(file) < 0).map(rel)).toEqual([]);
  });

  it('has no import that runs up the house, or across to a room beside it', () => {
    const up = valueImportsBetweenRooms
      .filter(({ from, to }) => floorOf(to) >= floorOf(from))
      .map(({ arrow }) => arrow);
    expect(up).toEqual([]);
  });

  it('keeps config the ground floor: it imports nothing of ours, not even a type', () => {
    const out = files
      .filter((file) => roomOf(file) === 'config')
      .flatMap((file) =>
        graph
          .get(file)!
          .filter(({ to }) => roomOf(to) !== 'config')
          .map(({ to }) => `${rel(file)} -> ${rel(to)}`),
      );
    expect(out).toEqual([]);
  });

  it('keeps taking an order free of the web: src/services/orders/ imports nothing from src/http/, not even a type', () => {
    expect(importsBetween('services/orders', 'http')).toEqual([]);
  });

  it("keeps the store's rooms apart: the port imports no adapter, and neither adapter the other, not even a type", () => {
    expect([
      ...importsBetween('store/port', 'store/sqlite'),
      ...importsBetween('store/port', 'store/postgres'),
      ...importsBetween('store/sqlite', 'store/postgres'),
      ...importsBetween('store/postgres', 'store/sqlite'),
    ]).toEqual([]);
  });

  it('keeps SQL that runs at run time out of migration files: only migrations and the stores import one', () => {
    // A migration (NAME.migration.ts) is read by the list that applies it (KIND.migrations.ts), by another
    // migration, and by the store that opens it (KIND.store.ts, for its version); an adapter's statements are
    // never read from one.
    const migration = (file: string) => file.endsWith('.migration.ts');
    const mayImport = (file: string) => /\.migrations?\.ts$|\.store\.ts$/.test(file);
    const readers = files
      .filter((file) => !mayImport(file))
      .flatMap((file) =>
        graph
          .get(file)!
          .filter(({ to }) => migration(to))
          .map(({ to }) => `${rel(file)} -> ${rel(to)}`),
      );
    expect(readers).toEqual([]);
  });

  it('has metrics import nothing that runs from http', () => {
    const arrows = valueImportsBetweenRooms.filter(
      ({ from, to }) => roomOf(from) === 'metrics' && roomOf(to) === 'http',
    );
    expect(arrows.map(({ arrow }) => arrow)).toEqual([]);
  });

  it('lets only the process room import the composition root (src/container.ts, src/deps.ts)', () => {
    const composition = new Set([path.join(src, 'container.ts'), path.join(src, 'deps.ts')]);
    const outside = valueImportsBetweenRooms
      .filter(({ from, to }) => composition.has(to) && !composition.has(from) && roomOf(from) !== 'processes')
      .map(({ arrow }) => arrow);
    expect(outside).toEqual([]);
  });

  it('has no import of BullMQ or ioredis that runs: both are loaded with require (src/queue/bullmq.ts, src/redis/ioredis.ts)', () => {
    // An ES import of either makes Node lex every file its re-exports name, at each start (src/queue/bullmq.ts).
    const entries = ['workers', 'jobs'].flatMap((dir) => sourceFiles(path.join(root, dir)));
    const importing = [...files, ...entries]
      .filter((file) => importsThatRun(readFileSync(file, 'utf8'), ['bullmq', 'ioredis']))
      .map((file) => path.relative(root, file));
    expect(importing).toEqual([]);
  });

  it('finds an import of a package that runs in each of its forms, and not one erased when compiled', () => {
    const runs = (line: string) => importsThatRun(line, ['bullmq']);
    expect(runs(`import { Queue } from 'bullmq';`)).toBe(true);
    expect(runs(`import { type Job, Queue } from "bullmq";`)).toBe(true);
    expect(runs(`export { Queue } from 'bullmq';`)).toBe(true);
    expect(runs(`export * from 'bullmq/dist/esm/classes/queue.js';`)).toBe(true);
    expect(runs(`import 'bullmq';`)).toBe(true);
    expect(runs(`const { Queue } = await import('bullmq');`)).toBe(true);
    expect(runs(`import type { Job } from 'bullmq';`)).toBe(false);
    expect(runs(`export type { Job } from 'bullmq';`)).toBe(false);
    expect(runs(`import { Queue } from 'bullmq-pro';`)).toBe(false);
  });

  it('has each Procfile entry run its process from the process room in one call', () => {
    const procfile = readFileSync(path.join(root, 'Procfile'), 'utf8');
    const entries = [...procfile.matchAll(/^(\w+):.* dist\/(\S+)\.js$/gm)].map(([, name, entry]) => ({
      name: name!,
      text: readFileSync(path.join(root, `${entry!}.ts`), 'utf8'),
    }));
    expect(entries.map(({ name }) => name)).toEqual(['web', 'worker', 'clock']);
    for (const { name, text } of entries)
      expect(text).toMatch(
        new RegExp(
          `^import \\{ runProcess \\} from '[./]*(src/)?processes/run-process\\.js';\\nrunProcess\\('${name}'\\);\\n$`,
        ),
      );
  });

  it('keeps the benchmarks above the tests: no test helper imports scripts/bench/', () => {
    const bench = path.join(root, 'scripts/bench');
    const up = sourceFiles(path.join(root, 'test/helpers')).flatMap((file) =>
      importsOf(file)
        .filter(({ to }) => to.startsWith(`${bench}${path.sep}`))
        .map(({ to }) => `${path.relative(root, file)} -> ${path.relative(root, to)}`),
    );
    expect(up).toEqual([]);
  });

  it('has no import cycle among the imports that run', () => {
    // Tarjan's strongly connected components; any component of two or more files is a cycle.
    let index = 0;
    const order = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    const visit = (file: string) => {
      order.set(file, index);
      low.set(file, index);
      index += 1;
      stack.push(file);
      onStack.add(file);
      for (const { to, typeOnly } of graph.get(file) ?? []) {
        if (typeOnly || !graph.has(to)) continue;
        if (!order.has(to)) {
          visit(to);
          low.set(file, Math.min(low.get(file)!, low.get(to)!));
        } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, order.get(to)!));
      }
      if (low.get(file) === order.get(file)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(rel(member));
        } while (member !== file);
        if (component.length > 1) cycles.push(component.sort());
      }
    };
    for (const file of files) if (!order.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });
});
