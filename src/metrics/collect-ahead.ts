// prom-client's default collectors read /proc/self synchronously when a scrape asks, holding up the scrape's
// Redis pipeline (BENCHMARKS.md): collected ahead instead, on a timer a little before a steadily scraped
// process's next scrape is due, so the scrape only formats them. The metrics listener collects its whole text
// ahead on the same cadence (scrapeCadence) when METRICS_REUSE_MS allows; this serves METRICS_REUSE_MS=0.

export interface ScrapeCadenceOptions {
  /** How long before the next expected scrape `due` runs. */
  leadMs?: number;
  /** Scrapes further apart than this schedule nothing: a process scraped that rarely does its work at scrape time. */
  maxIntervalMs?: number;
  now?: () => number;
}

export interface ScrapeCadence {
  /** Tells of a scrape: the timer of the last one is cleared, and one is set for the next expected. */
  scraped(): void;
  /** Stops the timer (a scrape starts it again). */
  stop(): void;
}

/**
 * Runs `due` `leadMs` before the next scrape is due, taking the interval between the last two scrapes for the
 * next: Prometheus scrapes a target at a steady interval. A timer runs only while scrapes come (unref'd): when
 * they stop, `due` runs once at most after the last, and never again until two more scrapes set an interval.
 */
export function scrapeCadence(due: () => void, options: ScrapeCadenceOptions = {}): ScrapeCadence {
  const { leadMs = 250, maxIntervalMs = 5 * 60_000, now = () => performance.now() } = options;
  let lastScrape: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  return {
    scraped() {
      const at = now();
      stop();
      const interval = lastScrape === undefined ? undefined : at - lastScrape;
      lastScrape = at;
      if (interval === undefined || interval <= leadMs || interval > maxIntervalMs) return;
      timer = setTimeout(() => {
        timer = undefined;
        due();
      }, interval - leadMs);
      timer.unref();
    },
    stop,
  };
}

export interface CollectAheadOptions extends ScrapeCadenceOptions {
  /** Figures older than this are read again at scrape time, as without this (and on a first scrape). */
  maxAgeMs?: number;
}

export interface CollectAhead {
  /** Figures read on the timer so far (tests). */
  readonly ahead: number;
  /** Stops the timer (a scrape starts it again). */
  stop(): void;
}

type Collect = (this: object) => unknown;

/**
 * Replaces the `collect` of `metrics` (prom-client metrics whose collect is synchronous) so that a scrape reads
 * their figures only when none were read in the last `maxAgeMs`; each scrape schedules one read `leadMs` before
 * the next scrape is due (the interval between the last two). A timer runs only while the process is scraped:
 * when scrapes stop, one read at most follows the last, and none after.
 */
export function collectAhead(metrics: readonly object[], options: CollectAheadOptions = {}): CollectAhead {
  const { maxAgeMs = 1000, now = () => performance.now() } = options;
  const collectors = metrics.flatMap((metric) => {
    const collect = (metric as { collect?: Collect }).collect;
    return typeof collect === 'function' ? [{ metric, collect }] : [];
  });
  let readAt = -Infinity;
  let inScrape = false;
  let ahead = 0;
  const readAll = () => {
    for (const { metric, collect } of collectors) collect.call(metric);
    readAt = now();
  };
  const cadence = scrapeCadence(
    () => {
      ahead++;
      readAll();
    },
    { ...options, now },
  );
  // The first collector a scrape asks does this for all of them (a registry asks them all in one tick).
  const scraped = () => {
    if (now() - readAt > maxAgeMs) readAll();
    cadence.scraped();
  };
  for (const { metric } of collectors)
    (metric as { collect?: Collect }).collect = () => {
      if (inScrape) return;
      inScrape = true;
      queueMicrotask(() => {
        inScrape = false;
      });
      scraped();
    };
  return {
    get ahead() {
      return ahead;
    },
    stop: cadence.stop,
  };
}
