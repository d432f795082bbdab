import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';

/** ioredis's classes, loaded with `require` for the reason src/queue/bullmq.ts gives; types from `import type`. */
export const ioredis = createRequire(import.meta.url)('ioredis') as typeof IORedis;
