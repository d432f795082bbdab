// Vitest global setup: one private Redis for the whole run (or REDIS_URL when given); each test file
// then works under its own queue prefix, so runs and files never collide.
import type { TestProject } from 'vitest/node';
import { ensureRedis } from '../../scripts/redis.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const redis = await ensureRedis();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}
