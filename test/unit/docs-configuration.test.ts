// docs/configuration.md stays true to the code: its table names every setting the configuration schema reads, and
// nothing else (but the OpenTelemetry SDK's own OTEL_* variables, which the SDK reads).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The source file that declares the configuration schema, wherever under src/ it lives. */
function configSource(): string {
  const files = fs.readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' });
  const found = files
    .filter((file) => file.endsWith('.ts'))
    .map((file) => fs.readFileSync(path.join(ROOT, 'src', file), 'utf8'))
    .filter((text) => /const ConfigSchema = z\s*\.object\(\{/.test(text));
  expect(found, 'one file of src/ declares ConfigSchema').toHaveLength(1);
  return found[0]!;
}

/** The keys of the schema's object: its lines `  NAME: …` up to the object's end. */
function schemaKeys(source: string): string[] {
  const body = source.slice(source.search(/const ConfigSchema = z\s*\.object\(\{/));
  const end = body.search(/^\}\)/m);
  return [...body.slice(0, end).matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
}

/** The variables of the table's first column (`A` or `A` / `B`). */
function tableVariables(): string[] {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8');
  return [...doc.matchAll(/^\| ([^|]+) \|/gm)]
    .map((m) => m[1]!)
    .filter((cell) => cell.startsWith('`'))
    .flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
}

describe('docs/configuration.md', () => {
  it('when the configuration reads a setting, then the table names it, and names nothing else', () => {
    const keys = schemaKeys(configSource());
    expect(keys.length).toBeGreaterThan(40);
    const documented = tableVariables().filter((name) => !name.startsWith('OTEL_'));
    expect([...new Set(documented)].sort()).toEqual([...new Set(keys)].sort());
  });
});
