// Latency samples as the benchmarks report them: percentiles and a table's cells.

/** The p-th percentile (nearest rank) of `samples`; NaN when there are none. */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** `p50 | p99 | max | count` in milliseconds, for a Markdown table's row. */
export const sampleCells = (samples: number[]): string =>
  `${percentile(samples, 50).toFixed(2)} | ${percentile(samples, 99).toFixed(2)} | ${Math.max(...samples).toFixed(2)} | ${samples.length}`;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
