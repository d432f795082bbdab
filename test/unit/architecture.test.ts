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

/** Every relative module a file imports (static, re-exports and dynamic), as absolute .ts paths. */
function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const found = [
    ...[...text.matchAll(/^\s*(?:import|export)\s+(type\s)?[^;]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/gm)].map(
      (m) => ({ spec: m[2]!, typeOnly: Boolean(m[1]) }),
    ),
    ...[...text.matchAll(/\bimport\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)].map((m) => ({
      spec: m[1]!,
      typeOnly: false,
    })),
    ...[...text.matchAll(/^import\s+['"](\.{1,2}\/[^'"]+)['"]/gm)].map((m) => ({
      spec: m[1]!,
      typeOnly: false,
    })),
  ];
  return found
    .filter(({ spec }) => spec.endsWith('.js'))
    .map(({ spec, typeOnly }) => ({
      to: path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'),
      typeOnly,
    }));
}

const files = sourceFiles(src);
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const rel = (file: string) => path.relative(src, file);

// Lower rooms: they hold ports, adapters and rules, and know nothing of who composes or calls them.
const LOWER = ['store/', 'domain/', 'queue/', 'redis/'];
const UPPER = ['services/', 'processes/', 'http/', 'deps.ts', 'container.ts'];
const isIn = (file: string, rooms: string[]) => rooms.some((room) => rel(file).startsWith(room));

describe('architecture', () => {
  it('finds the source files and their imports', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get(path.join(src, 'deps.ts'))?.length).toBeGreaterThan(0);
  });

  it('no import runs from store, domain, queue or redis up to services, processes, deps, the container or http', () => {
    const upward = files
      .filter((file) => isIn(file, LOWER))
      .flatMap((file) =>
        graph
          .get(file)!
          .filter(({ to }) => isIn(to, UPPER))
          .map(({ to }) => `${rel(file)} -> ${rel(to)}`),
      );
    expect(upward).toEqual([]);
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
