/**
 * Remembers a lookup's answers for `ttlMs` per process: hot keys stop costing a query per request, and a change
 * (a disabled key, a new card) is seen within `ttlMs`. Bounded: it forgets everything when it fills up.
 */
export function cachedFor<K, V>(
  ttlMs: number,
  lookup: (key: K) => V,
  maxEntries = 10_000,
): (key: K, now: number) => V {
  const entries = new Map<K, { value: V; at: number }>();
  return (key, now) => {
    const hit = entries.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value;
    const value = lookup(key);
    if (entries.size >= maxEntries) entries.clear();
    entries.set(key, { value, at: now });
    return value;
  };
}

/**
 * Shares one computation among concurrent callers: while a call is in flight, others get its promise instead
 * of starting their own, so a thousand concurrent scrapes cost what one does.
 */
export function sharedInFlight<T>(compute: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  return () =>
    (inFlight ??= compute().finally(() => {
      inFlight = null;
    }));
}
