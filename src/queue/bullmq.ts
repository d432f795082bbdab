import { createRequire } from 'node:module';
import type * as BullMQ from 'bullmq';

const require = createRequire(import.meta.url);

/** One of BullMQ's own files, by its path in the package (which has no `exports` map to forbid it). */
const file = (name: string) => require(`bullmq/dist/cjs/classes/${name}`) as typeof BullMQ;
const { UnrecoverableError, DelayedError } = file('errors/index.js');

/**
 * The BullMQ classes the service uses, loaded with `require` (as ioredis is: src/redis/ioredis.ts), each from its
 * own file. A CommonJS package imported from an ES module has its named exports found by Node's lexer, which reads
 * every file a re-export names: for BullMQ all of its ~170 files, at every process start. The lexer then ran hot
 * enough to be compiled, and that compilation's memory, on V8's threads, was most of a worker's peak resident
 * memory above where it settles. BullMQ's index would still load its PostgreSQL backend, its valkey-glide client
 * and more (~1 MiB of heap in every process); these files do not. They are the very classes its index exports
 * (test/unit/bullmq-classes.test.ts). Types still come from `import type … from 'bullmq'`. docs/developing.md, The
 * house.
 */
export const bullmq = {
  Queue: file('queue.js').Queue,
  Worker: file('worker.js').Worker,
  UnrecoverableError,
  DelayedError,
};
