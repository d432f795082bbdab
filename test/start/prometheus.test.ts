// A real Prometheus server (Debian's package, installed when missing and we may) on a free port, with its own
// storage folder, scraping this test's running processes with ops/prometheus/prometheus.yml (its targets and
// intervals rewritten for the test) and loading ops/prometheus/rules: every target is up, every rule is loaded
// and evaluates without error, and the series the rules read are there. Never the machine's Prometheus.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { OPS_DIR, RULES_DIR, alertNames, prometheusTool, rulesText } from '../helpers/prometheus.js';
import { createTestService, stopChild, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

interface Target {
  scrapePool: string;
  scrapeUrl: string;
  health: string;
  lastError: string;
}
interface Rule {
  name: string;
  type: string;
  health: string;
  state?: string;
  lastError?: string;
}

let service: TestService;
let prometheus: ChildProcess;
let dir: string;
let base: string;
let output = '';
const webTargets: string[] = [];

/** ops/prometheus/prometheus.yml as shipped, but scraping `targets` every second and its rules by full path. */
function testConfig(targets: string[]): string {
  const shipped = fs.readFileSync(path.join(OPS_DIR, 'prometheus.yml'), 'utf8');
  const replacements: [string, string][] = [
    ["targets: ['127.0.0.1:9464']", `targets: [${targets.map((t) => `'${t}'`).join(', ')}]`],
    ['- rules/', `- ${RULES_DIR}/`],
    ['scrape_interval: 15s', 'scrape_interval: 1s'],
    ['evaluation_interval: 15s', 'evaluation_interval: 1s'],
  ];
  return replacements.reduce((text, [from, to]) => {
    if (!text.includes(from)) throw new Error(`ops/prometheus/prometheus.yml no longer holds "${from}"`);
    return text.replace(from, to);
  }, shipped);
}

async function api<T>(pathAndQuery: string): Promise<T> {
  const res = await fetch(`${base}${pathAndQuery}`);
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${pathAndQuery}: ${body.error}`);
  return body.data;
}

const targets = async () => (await api<{ activeTargets: Target[] }>('/api/v1/targets')).activeTargets;
const rules = async () =>
  (await api<{ groups: { rules: Rule[] }[] }>('/api/v1/rules')).groups.flatMap((group) => group.rules);
const seriesCount = async (selector: string) =>
  (await api<{ result: unknown[] }>(`/api/v1/query?query=${encodeURIComponent(selector)}`)).result.length;

beforeAll(async () => {
  const binary = await prometheusTool('prometheus');
  // Two web processes, as a deployment has: the deployment-wide series come twice, which the rules must bear.
  // A worker and a clock (reconciling every second) add their heartbeats and counters through Redis.
  service = await createTestService({ env: { RECONCILE_CRON: '* * * * * *' } });
  // Prometheus scrapes each on its METRICS_PORT, never the API port.
  for (let i = 0; i < 2; i++) {
    const [port, metricsPort] = [await freePort(), await freePort()];
    await service.spawn(
      'src/server.ts',
      { PORT: String(port), METRICS_PORT: String(metricsPort) },
      'web listening',
    );
    webTargets.push(`127.0.0.1:${metricsPort}`);
    // Scrapes are not API requests: one request makes this process's http_requests_total series.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  }
  await service.startWorker();
  await service.spawn('jobs/clock.ts', { STORE_COUNTS_EVERY_S: '1' }, 'clock ready');

  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-prometheus-'));
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), testConfig(webTargets));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    binary,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  prometheus.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await until(
    async () => {
      if (prometheus.exitCode !== null) throw new Error(`prometheus exited:\n${output}`);
      return (await fetch(`${base}/-/ready`).catch(() => null))?.status === 200;
    },
    30_000,
    'prometheus ready',
  );
}, 300_000);

afterAll(async () => {
  if (prometheus) await stopChild(prometheus);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  await service?.close();
});

describe('a real Prometheus with ops/prometheus against running processes', () => {
  it('when it has scraped for a while, then every web process is a target and up', async () => {
    await until(
      async () => {
        const active = await targets();
        return active.length === webTargets.length && active.every((target) => target.health === 'up');
      },
      30_000,
      'every target up',
    );
    const active = await targets();
    expect(active.map((target) => target.scrapePool)).toEqual(webTargets.map(() => 'bookorders-web'));
    expect(active.map((target) => new URL(target.scrapeUrl).host).sort()).toEqual([...webTargets].sort());
  });

  it('when it evaluates the rules, then every alerting rule is loaded and evaluates without error', async () => {
    const names = alertNames();
    expect(names.length).toBeGreaterThan(0);
    await until(
      async () => {
        const loaded = await rules();
        return names.every((name) => loaded.find((rule) => rule.name === name)?.health === 'ok');
      },
      30_000,
      'every rule evaluated',
    );
    const loaded = await rules();
    expect(loaded.filter((rule) => rule.type === 'alerting').map((rule) => rule.name)).toEqual(names);
    expect(loaded.filter((rule) => rule.health !== 'ok')).toEqual([]);
  });

  it('when it has scraped, then every series the rules read is there, and with a worker running no heartbeat alert', async () => {
    // Every metric a rule's expression reads, but the webhook attempts: they appear with the first attempt
    // (webhooks.test.ts checks them).
    const expressions = [...rulesText().matchAll(/expr: (?:>-)?([\s\S]*?)\n\s+for:/g)].map((m) => m[1]);
    expect(expressions).toHaveLength(alertNames().length);
    const selectors = [
      ...new Set(expressions.join('\n').match(/\b(bookorders_[a-z_]+|http_requests_total)\b/g)),
    ]
      .filter((name) => name !== 'bookorders_webhook_attempts_total')
      .concat('bookorders_processes{role="worker"}', 'bookorders_processes{role="clock"}');
    expect(selectors).toContain('bookorders_reconcile_passes_total');
    const missing = async () => {
      const counts = await Promise.all(selectors.map(seriesCount));
      return selectors.filter((_, i) => counts[i] === 0);
    };
    // Waited for with a generous deadline; what is still missing then is named by the assertion.
    await until(async () => (await missing()).length === 0, 30_000).catch(() => undefined);
    expect(await missing()).toEqual([]);
    // Evaluated once more after the worker's series arrived (every second here), the alert is quiet.
    const heartbeatState = async () =>
      (await rules()).find((rule) => rule.name === 'BookordersNoWorkerHeartbeat')?.state;
    await until(async () => (await heartbeatState()) === 'inactive', 30_000).catch(() => undefined);
    expect(await heartbeatState()).toBe('inactive');
  });
});
