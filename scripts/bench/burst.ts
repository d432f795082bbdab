// The SQLite contention burst: N real orders (Prefer: respond-async) at C in flight against
// WEB_CONCURRENCY web processes and W workers on one SQLite file, all running; counts the answers 503 / 5030 (the
// web's wait for the write lock, WEB_DB_BUSY_TIMEOUT_MS, ran out), each sent again with the same request id.
//   node --import tsx scripts/bench/burst.ts [--orders 600] [--in-flight 50] [--webs 2] [--workers 3] [--rounds 3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { postAsyncOrder, prepareBuyer, refusedBusy, timed } from './buyer.js';
import { ANY_UNSETTLED, serviceEnv } from './stores.js';
import { running, startEntry, stopProcess, waitFor, waitForWeb, waitForWorkers } from './processes.js';
import { ensureRedis, freePort } from '../redis.js';

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '600' },
    'in-flight': { type: 'string', default: '50' },
    webs: { type: 'string', default: '2' },
    workers: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
  },
});
const say = (line: string) => process.stderr.write(`[bench-burst] ${line}\n`);

async function main() {
  const redis = await ensureRedis();
  try {
    for (let round = 1; round <= Number(values.rounds); round++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-burst-'));
      const { store, buyer } = await prepareBuyer('sqlite', `burst${round}`);
      const port = await freePort();
      const baseUrl = `http://127.0.0.1:${port}`;
      const env = serviceEnv(store, {
        REDIS_URL: redis.url,
        QUEUE_PREFIX: `burst${process.pid}r${round}`,
        LOG_LEVEL: 'info',
        LOG_PRETTY: 'false',
        RATE_LIMIT_PER_S: '0',
        PORT: String(port),
        WEB_CONCURRENCY: values.webs,
      });
      const logFile = path.join(dir, 'service.log');
      try {
        const web = startEntry('src/server.ts', env, logFile);
        for (let i = 0; i < Number(values.workers); i++) startEntry('workers/order.worker.ts', env, logFile);
        await waitForWeb(baseUrl, web);
        await waitForWorkers(logFile, Number(values.workers));
        const before = refusedBusy.count;
        const orders = Number(values.orders);
        const seconds = await timed(orders, Number(values['in-flight']), () =>
          postAsyncOrder(baseUrl, buyer),
        );
        const probe = store.probe();
        await waitFor(
          async () => (await probe.scalar(ANY_UNSETTLED)) === 0,
          'every order settled',
          300_000,
          50,
        );
        await probe.close();
        say(
          `round ${round}: ${orders} orders accepted in ${seconds.toFixed(1)} s (${(orders / seconds).toFixed(0)}/s), ` +
            `${refusedBusy.count - before} answered 503 / 5030 and sent again`,
        );
      } finally {
        await Promise.all([...running].map(stopProcess));
        await store.remove();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await redis.stop();
  }
}

main().catch((err: unknown) => {
  say(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
