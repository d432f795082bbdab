// Failover figures, seconds-scale: for (a) the Redis primary SIGKILLed behind three Sentinels and (b) the
// PostgreSQL primary stopped with -m immediate and its synchronous standby promoted, under the load of the failover
// tests (six callers, test/helpers/failover-load.ts): the time from the loss until an order is accepted again, until
// every accepted order is settled, and how many requests were answered 503 meanwhile; --runs of each, median and
// worst. The servers are private, on free ports (scripts/failover-servers.ts).
//   node --import tsx scripts/bench/failover.ts [--runs 5] [--only redis|postgres]
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FailoverRun } from '../../test/helpers/failover-load.js';
import { startPostgresPair, startRedisSentinels } from '../failover-servers.js';
import { figuresOfLoss, runSettings, summary } from './fault-runs.js';
import { createDatabase } from '../postgres.js';
import { ensureRedis } from '../redis.js';
import { runBench } from './processes.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  runs: '5',
  only: undefined,
});
const say = (line: string) => process.stderr.write(`[bench-failover] ${line}\n`);

interface Figures {
  acceptedAgainS: number;
  settledS: number;
  refused503: number;
}

const settings = (dir: string) => runSettings(dir, 'bf');

const figures = (run: FailoverRun): Figures => ({
  acceptedAgainS: Math.max(0, run.acceptedAgainMs) / 1000,
  settledS: run.settledMs / 1000,
  refused503: run.answers.filter((a) => a.at >= 0 && a.status === 503).length,
});

const once = (env: Record<string, string>, lose: () => Promise<void>) => figuresOfLoss(env, lose, figures);

async function redisRun(): Promise<Figures> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-failover-'));
  const redis = await startRedisSentinels();
  try {
    const env = { ...settings(dir), REDIS_SENTINELS: redis.sentinels, REDIS_SENTINEL_MASTER: redis.master };
    return await once(env, async () => void (await redis.killPrimary()));
  } finally {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresRun(redisUrl: string): Promise<Figures> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-failover-'));
  const pair = await startPostgresPair();
  try {
    await createDatabase(pair.primaryUrl, 'bench');
    const env = {
      ...settings(dir),
      DATABASE_URL: pair.urlOf('bench'),
      SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
      REDIS_URL: redisUrl,
    };
    return await once(env, async () => {
      await pair.losePrimary();
      await pair.promoteStandby();
    });
  } finally {
    await pair.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const runs = Number(values.runs);
  const results = [];
  if (values.only !== 'postgres') {
    const figures: Figures[] = [];
    for (let i = 1; i <= runs; i++) {
      figures.push(await redisRun());
      say(`redis run ${i}: ${JSON.stringify(figures.at(-1))}`);
    }
    results.push(summary('(a) Redis primary SIGKILLed behind three Sentinels', figures));
  }
  if (values.only !== 'redis') {
    const redis = await ensureRedis();
    try {
      const figures: Figures[] = [];
      for (let i = 1; i <= runs; i++) {
        figures.push(await postgresRun(redis.url));
        say(`postgres run ${i}: ${JSON.stringify(figures.at(-1))}`);
      }
      results.push(
        summary('(b) PostgreSQL primary stopped -m immediate, synchronous standby promoted', figures),
      );
    } finally {
      await redis.stop();
    }
  }
  process.stdout.write(`${JSON.stringify({ loadAverage: os.loadavg(), results }, null, 2)}\n`);
}

runBench(main, { exitWhenDone: true });
