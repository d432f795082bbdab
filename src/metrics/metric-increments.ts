import type { FlushCommands } from './metrics.recorder.js';

/**
 * Increments to Redis hash fields, summed in memory per key and field until they are sent: however many jobs
 * add to one series before a flush, Redis gets one HINCRBY (counts) or HINCRBYFLOAT (sums) for it.
 */
export class MetricIncrements {
  private readonly counts = new Map<string, Map<string, number>>();
  private readonly sums = new Map<string, Map<string, number>>();

  /** Adds an integer `amount` to `field` of the hash `key` (HINCRBY). */
  add(key: string, field: string, amount: number): void {
    addTo(this.counts, key, field, amount);
  }

  /** Adds a float `amount` to `field` of the hash `key` (HINCRBYFLOAT). */
  addFloat(key: string, field: string, amount: number): void {
    addTo(this.sums, key, field, amount);
  }

  get isEmpty(): boolean {
    return this.counts.size === 0 && this.sums.size === 0;
  }

  /** Queues one command per field on `commands`. */
  appendTo(commands: Pick<FlushCommands, 'hincrby' | 'hincrbyfloat'>): void {
    for (const [key, fields] of this.counts)
      for (const [field, amount] of fields) commands.hincrby(key, field, amount);
    for (const [key, fields] of this.sums)
      for (const [field, amount] of fields) commands.hincrbyfloat(key, field, amount);
  }
}

function addTo(hashes: Map<string, Map<string, number>>, key: string, field: string, amount: number) {
  let fields = hashes.get(key);
  if (!fields) hashes.set(key, (fields = new Map()));
  fields.set(field, (fields.get(field) ?? 0) + amount);
}
