// ops/prometheus checked by Prometheus's own tool: the scrape configuration and rule files parse, and every
// alerting rule's promtool unit tests (rules/*.test.yml) pass; each rule has at least one test that fires it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { OPS_DIR, RULES_DIR, alertNames, prometheusTool } from '../helpers/prometheus.js';

const run = promisify(execFile);
let promtool: string;

/** Runs promtool in `cwd`; its output, or an error carrying it. */
async function promtoolRun(args: string[], cwd: string): Promise<string> {
  try {
    const { stdout, stderr } = await run(promtool, args, { cwd });
    return stdout + stderr;
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${stdout}${stderr}`, { cause: err });
  }
}

const testFiles = () => fs.readdirSync(RULES_DIR).filter((file) => file.endsWith('.test.yml'));

beforeAll(async () => {
  promtool = await prometheusTool('promtool');
}, 300_000);

describe('ops/prometheus', () => {
  it('when promtool checks prometheus.yml, then it is valid and loads the rule files', async () => {
    const output = await promtoolRun(['check', 'config', 'prometheus.yml'], OPS_DIR);
    expect(output).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('when promtool checks the rule files, then every one is valid', async () => {
    const files = fs.readdirSync(RULES_DIR).filter((file) => file.endsWith('.rules.yml'));
    expect(files.length).toBeGreaterThan(0);
    const output = await promtoolRun(['check', 'rules', ...files], RULES_DIR);
    expect(output).toContain(`SUCCESS: ${alertNames().length} rules found`);
  });

  it("when promtool runs the rules' unit tests, then they pass", async () => {
    expect(testFiles().length).toBeGreaterThan(0);
    const output = await promtoolRun(['test', 'rules', ...testFiles()], RULES_DIR);
    expect(output).toContain('SUCCESS');
  });

  it('every alerting rule has a unit test in which it fires', () => {
    const tests = testFiles()
      .map((file) => fs.readFileSync(path.join(RULES_DIR, file), 'utf8'))
      .join('\n');
    const firing = new Set(
      [...tests.matchAll(/alertname: (\S+)\s+exp_alerts:\s*\n\s+- exp_labels/g)].map((match) => match[1]),
    );
    const quiet = new Set(
      [...tests.matchAll(/alertname: (\S+)\s+exp_alerts: \[\]/g)].map((match) => match[1]),
    );
    for (const name of alertNames()) {
      expect(firing, `${name} fires in no test`).toContain(name);
      expect(quiet, `${name} is quiet in no test`).toContain(name);
    }
  });
});
