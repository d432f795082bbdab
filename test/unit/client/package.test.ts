// The package stands alone: its source imports only Node's built-ins and its own files, and it declares no
// runtime dependency.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const CLIENT = path.resolve(import.meta.dirname, '../../../client');

describe('book-order-client', () => {
  it('imports only node: built-ins and its own modules', () => {
    const sources = fs.readdirSync(path.join(CLIENT, 'src')).filter((f) => f.endsWith('.ts'));
    expect(sources.length).toBeGreaterThan(0);
    for (const file of sources) {
      const text = fs.readFileSync(path.join(CLIENT, 'src', file), 'utf8');
      const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map(
        (m) => m[1]!,
      );
      for (const specifier of specifiers) expect(specifier, `${file}`).toMatch(/^(node:|\.\/[\w-]+\.js$)/);
    }
  });

  it('is an ES module for Node 20 with types and no runtime dependencies', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(CLIENT, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'book-order-client', type: 'module', engines: { node: '>=20' } });
    expect(pkg.exports['.'].types).toBe('./dist/index.d.ts');
    expect(pkg.dependencies ?? {}).toEqual({});
  });
});
