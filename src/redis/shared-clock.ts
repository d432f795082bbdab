import type { Logger } from '../logger.js';
import { whenReady } from './redis-lock.js';
import type { RedisClient } from './redis.js';

/**
 * The time of the deployment: this host's clock corrected by its offset from Redis's clock (`TIME`), which every
 * process of the deployment reaches. Leases, claims and windows that one process writes and another judges (an
 * attempt's lease and reconciliation, webhook claims, heartbeats) then compare times of one clock, however far
 * a host's own clock has drifted.
 */
export interface SharedClock {
  now(): number;
  /** How far this host's clock is from the shared one, in ms (positive: ahead), as last measured. */
  offsetMs(): number;
  stop(): void;
}

/** A host clock off by more than this is said so, in the logs and in /readyz (the service still runs right). */
export const CLOCK_SKEW_BOUND_MS = 2000;
const MEASURE_EVERY_MS = 10_000;
/** A measure whose round trip took longer says too little about the offset: it is not used. */
const LONGEST_ROUND_TRIP_MS = 500;
const FIRST_MEASURE_WAIT_MS = 2000;

/**
 * Measures the offset now (waiting up to 2 s for Redis), then every 10 s. While Redis does not answer, the last
 * offset is kept (0 until one is measured).
 */
export async function startSharedClock(redis: RedisClient, logger: Logger): Promise<SharedClock> {
  let ahead = 0;
  let skewed = false;
  const measure = async () => {
    const sent = Date.now();
    const [seconds, micros] = await redis.time();
    const received = Date.now();
    if (received - sent > LONGEST_ROUND_TRIP_MS) return;
    const shared = Number(seconds) * 1000 + Math.round(Number(micros) / 1000);
    ahead = Math.round((sent + received) / 2 - shared);
    if (Math.abs(ahead) > CLOCK_SKEW_BOUND_MS !== skewed) {
      skewed = !skewed;
      if (skewed)
        logger.warn(
          { clockOffsetMs: ahead, boundMs: CLOCK_SKEW_BOUND_MS },
          "this host's clock is off Redis's by more than the bound; the service uses Redis's time",
        );
      else logger.info({ clockOffsetMs: ahead }, "this host's clock is within the bound of Redis's again");
    }
  };
  const tryMeasure = () => measure().catch(() => undefined);
  await whenReady(redis, FIRST_MEASURE_WAIT_MS).catch(() => undefined);
  await tryMeasure();
  const timer = setInterval(() => void tryMeasure(), MEASURE_EVERY_MS).unref();
  return {
    now: () => Date.now() - ahead,
    offsetMs: () => ahead,
    stop: () => clearInterval(timer),
  };
}
