import { createRequire } from 'node:module';
import type * as BullMQ from 'bullmq';

/**
 * BullMQ's classes, loaded with `require` (as ioredis is: src/redis/ioredis.ts). A CommonJS package imported from an
 * ES module has its named exports found by Node's lexer, which reads every file a re-export names: for BullMQ all
 * of its ~170 files, at every process start. The lexer then runs hot enough to be compiled, and that compilation's
 * memory, on V8's threads, was most of a worker's peak resident memory above where it settles (docs/developing.md,
 * The house). Types still come from `import type … from 'bullmq'`; the classes are the ones any `import` gets.
 */
export const bullmq = createRequire(import.meta.url)('bullmq') as typeof BullMQ;
