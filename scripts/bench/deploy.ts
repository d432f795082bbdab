// A rolling restart of this tree under load, timed: each process's stop (SIGTERM to exit) and its replacement's
// start (spawn to ready), per kind (web, worker, clock), and what the callers saw, --runs times on each of
// --stores (test/helpers/rolling-deploy.ts, as test/deploy/rolling-restart.test.ts runs it, with the service's
// default drain), every process started as the Procfile runs it, compiled (dist/ built first when stale). Writes
// the "Deploy: stop and ready" section of BENCHMARKS.md.
//   node --import tsx scripts/bench/deploy.ts [--stores sqlite,postgres] [--runs 3] [--write]
import os from 'node:os';
import { loadConfig } from '../../src/config/config.js';
import { rollingDeploy, THIS_TREE } from '../../test/helpers/rolling-deploy.js';
import { ensureRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';
import { printSection } from './benchmarks-file.js';
import { deployFigures, deploySection, type DeployFigures } from './deploy-report.js';
import { buildCheckout, ROOT, runBench } from './processes.js';
import { freshStore, parseStoreKinds, stopPostgresServer, type StoreKind } from './stores.js';

const values = benchArgs({ stores: 'sqlite,postgres', runs: '3', write: false });
const say = (line: string) => process.stderr.write(`[bench-deploy] ${line}\n`);

/** The drain a web does by default (config.ts), not the deploy tests' shorter one. */
const DRAIN_MS = loadConfig({ LOG_LEVEL: 'silent' }).SHUTDOWN_DRAIN_MS;

async function oneRun(kind: StoreKind, redisUrl: string): Promise<DeployFigures> {
  const store = await freshStore(kind, 'bench_deploy');
  const run = await rollingDeploy({
    from: THIS_TREE,
    to: THIS_TREE,
    drainMs: DRAIN_MS,
    redisUrl,
    store: async () => ({ env: { ...store.env }, drop: () => store.remove() }),
    compiled: true,
  });
  return deployFigures(run);
}

async function main() {
  // As operators run PostgreSQL, unless told otherwise: a private server keeps fsync on.
  process.env.BENCH_POSTGRES_DURABLE ??= 'true';
  const kinds = parseStoreKinds(values.stores);
  const runs = Number(values.runs);
  await buildCheckout(ROOT);
  const redis = await ensureRedis();
  const results: { kind: StoreKind; runs: DeployFigures[] }[] = [];
  try {
    for (const kind of kinds) {
      const figures: DeployFigures[] = [];
      for (let i = 1; i <= runs; i++) {
        figures.push(await oneRun(kind, redis.url));
        say(`${kind} run ${i}: ${JSON.stringify(figures.at(-1))}`);
      }
      results.push({ kind, runs: figures });
    }
  } finally {
    await redis.stop();
    await stopPostgresServer();
  }
  const durable = process.env.BENCH_POSTGRES_DURABLE === 'true';
  const section = deploySection(results, {
    command: `${durable ? '' : 'BENCH_POSTGRES_DURABLE=false '}node --import tsx scripts/bench/deploy.ts --stores ${values.stores} --runs ${runs}`,
    setting: `${os.cpus().length} cores, ${runs} run${runs === 1 ? '' : 's'} per store${kinds.includes('postgres') ? `, PostgreSQL ${process.env.DATABASE_URL ? "DATABASE_URL's server" : `private, fsync ${durable ? 'on' : 'off'}`}` : ''}`,
    drainMs: DRAIN_MS,
  });
  printSection('Deploy: stop and ready', section, values.write);
}

runBench(main, { exitWhenDone: true });
