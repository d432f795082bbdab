import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';

// With WEB_CONCURRENCY > 1 a scrape reaches one web worker of the cluster; that worker asks the primary,
// which collects every worker's registry over IPC (prom-client's AggregatorRegistry) and sums them.
const REQUEST = 'bookorders:metrics-request';
const REPLY = 'bookorders:metrics-reply';
const REPLY_TIMEOUT_MS = 3000;

interface Reply {
  type: typeof REPLY;
  id: number;
  text?: string;
  error?: string;
}

const isMessage = <T extends { type: string }>(message: unknown, type: T['type']): message is T =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;

/** In the cluster primary: answers each web worker's request with the process metrics of all workers. */
export function serveClusterMetrics(logger: Logger): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage<{ type: typeof REQUEST; id: number }>(message, REQUEST)) return;
    const reply = (fields: Partial<Reply>) =>
      worker.isConnected() && worker.send({ type: REPLY, id: message.id, ...fields });
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: unknown) => {
        logger.warn({ err }, 'cluster metrics not collected');
        reply({ error: String(err) });
      },
    );
  });
}

/**
 * The text of this process's own metrics; in a cluster worker, those of the whole cluster summed by the primary,
 * or this worker's alone when the primary does not answer in time.
 */
export function processMetricsSource(registry: Registry): () => Promise<string> {
  if (!cluster.isWorker || !process.send) return () => registry.metrics();
  // Constructing one adds prom-client's listener that hands this registry to the primary.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  const pending = new Map<number, (text: string | undefined) => void>();
  let sequence = 0;
  process.on('message', (message: unknown) => {
    if (isMessage<Reply>(message, REPLY)) pending.get(message.id)?.(message.text);
  });
  return () =>
    new Promise<string | undefined>((resolve) => {
      const id = ++sequence;
      const settle = (text: string | undefined) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(text);
      };
      const timer = setTimeout(() => settle(undefined), REPLY_TIMEOUT_MS);
      pending.set(id, settle);
      process.send!({ type: REQUEST, id });
    }).then((text) => text ?? registry.metrics());
}
