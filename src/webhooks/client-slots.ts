/**
 * A client's share of one worker process's delivery slots: its endpoints together have at most `perClient`
 * attempts under way in this process at once, so that one client's slow receivers, however many, leave the other
 * slots to the other clients. Kept in memory: the share is of this process's slots, which no other process sees.
 */
export interface ClientSlots {
  /**
   * Takes one of the client's slots, to be released once the attempt has ended; 'full' when it has them all.
   * slow: one of the client's attempts under way has taken longer than `slowAfterMs`, so its slots may stay taken
   * up to a time-out.
   */
  take(clientId: number): { kind: 'taken'; release(): void } | { kind: 'full'; slow: boolean };
  /** Attempts of the client under way in this process now. */
  inUse(clientId: number): number;
}

export function createClientSlots(options: {
  perClient: number;
  slowAfterMs: number;
  clock: () => number;
}): ClientSlots {
  /** When each attempt under way began, by client; a client with none is not kept. */
  const began = new Map<number, Set<{ at: number }>>();
  return {
    take(clientId) {
      const now = options.clock();
      const held = began.get(clientId) ?? new Set();
      if (held.size >= options.perClient) {
        const oldest = Math.min(...[...held].map((h) => h.at));
        return { kind: 'full', slow: now - oldest > options.slowAfterMs };
      }
      const slot = { at: now };
      held.add(slot);
      began.set(clientId, held);
      let released = false;
      return {
        kind: 'taken',
        release() {
          if (released) return;
          released = true;
          held.delete(slot);
          if (held.size === 0 && began.get(clientId) === held) began.delete(clientId);
        },
      };
    },
    inUse: (clientId) => began.get(clientId)?.size ?? 0,
  };
}

/** A client's share of a worker's delivery slots: WEBHOOK_CONCURRENCY_PER_CLIENT, or a quarter of them. */
export function clientShare(config: {
  WEBHOOK_CONCURRENCY: number;
  WEBHOOK_CONCURRENCY_PER_CLIENT?: number | undefined;
}): number {
  return config.WEBHOOK_CONCURRENCY_PER_CLIENT ?? Math.max(1, Math.floor(config.WEBHOOK_CONCURRENCY / 4));
}
