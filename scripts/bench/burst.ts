// The SQLite contention burst: N real orders (Prefer: respond-async) at C in flight against
// WEB_CONCURRENCY web processes and W workers on one SQLite file, all running; counts the answers 503 / 5030 (the
// web's wait for the write lock, WEB_DB_BUSY_TIMEOUT_MS, ran out), each sent again with the same request id.
//   node --import tsx scripts/bench/burst.ts [--orders 600] [--in-flight 50] [--webs 2] [--workers 3] [--rounds 3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postAsyncOrder, prepareBuyer, refusedBusy, timed } from './buyer.js';
import { ANY_UNSETTLED, orderServiceEnv } from './stores.js';
import { running, stopProcess, waitFor, runBench, startWebAndWorkers } from './processes.js';
import { ensureRedis, freePort } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  orders: '600',
  'in-flight': '50',
  webs: '2',
  workers: '3',
  rounds: '3',
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
      const prefix = `burst${process.pid}r${round}`;
      const env = orderServiceEnv(
        store,
        { redisUrl: redis.url, prefix, port },
        { WEB_CONCURRENCY: values.webs },
      );
      const logFile = path.join(dir, 'service.log');
      try {
        await startWebAndWorkers(env, logFile, Number(values.workers));
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

runBench(main);
