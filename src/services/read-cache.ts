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
