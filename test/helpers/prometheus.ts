// Prometheus for the tests: Debian's `prometheus` package provides both `promtool` and the server. Installed
// when missing and we may (root, apt-get), as the test setup does for Redis and PostgreSQL.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { aptInstall } from '../../scripts/postgres.js';

export const OPS_DIR = path.resolve(import.meta.dirname, '../../ops/prometheus');
export const RULES_DIR = path.join(OPS_DIR, 'rules');

type Tool = 'promtool' | 'prometheus';

function find(tool: Tool): string | null {
  for (const dir of ['/usr/bin', '/usr/local/bin']) {
    const candidate = path.join(dir, tool);
    if (fs.existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/** The path of `promtool` or `prometheus`, installing Debian's package when missing; throws saying what to do. */
export async function prometheusTool(tool: Tool): Promise<string> {
  const found = find(tool);
  if (found) return found;
  let installed: boolean;
  try {
    installed = aptInstall('prometheus', tool);
  } catch (err) {
    // Another test file may be installing it at the same moment (apt's lock): wait for its result.
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      const late = find(tool);
      if (late) return late;
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    throw new Error(`${tool} could not be installed: ${(err as Error).message}`, { cause: err });
  }
  const after = installed ? find(tool) : null;
  if (after) return after;
  throw new Error(
    `${tool} is not installed and could not be installed (needs root and apt-get): ` +
      'install Debian\'s "prometheus" package (apt-get install prometheus), which provides promtool and prometheus',
  );
}

/** The text of every rule file in ops/prometheus/rules (not their tests). */
export function rulesText(): string {
  return fs
    .readdirSync(RULES_DIR)
    .filter((file) => file.endsWith('.rules.yml'))
    .map((file) => fs.readFileSync(path.join(RULES_DIR, file), 'utf8'))
    .join('\n');
}

/** The names of every alerting rule in the rule files, in order. */
export function alertNames(): string[] {
  return [...rulesText().matchAll(/^\s+- alert: (\S+)$/gm)].map((match) => match[1]!);
}
