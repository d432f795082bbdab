interface Pending<I, O> {
  input: I;
  resolve: (result: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Calls asked for in one turn of the event loop (requests that arrived together, jobs whose payments came back
 * together) applied by one `many` (one transaction, one round trip) instead of one each: a group commit. Each
 * caller's promise settles only once `many` has, with its own result, so nothing is acknowledged before it is
 * done. When `many` fails, every call of the group fails with its error: each caller retries as it would after
 * its own failure.
 *
 * Two inputs with the same `keyOf` never share a group (the second waits for the next), so that a concurrent
 * twin is applied exactly as it would be one after the other.
 */
export function groupCalls<I, O>(
  many: (inputs: readonly I[]) => Promise<O[]>,
  maxGroup: number,
  keyOf?: (input: I) => string,
): (input: I) => Promise<O> {
  let waiting: Pending<I, O>[] = [];
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    const keys = new Set<string>();
    const group: Pending<I, O>[] = [];
    const later: Pending<I, O>[] = [];
    for (const pending of waiting) {
      const key = keyOf?.(pending.input);
      if (group.length < maxGroup && (key === undefined || !keys.has(key))) {
        if (key !== undefined) keys.add(key);
        group.push(pending);
      } else later.push(pending);
    }
    waiting = later;
    if (waiting.length > 0) schedule();
    many(group.map((p) => p.input)).then(
      (results) => group.forEach((p, i) => p.resolve(results[i]!)),
      (err: unknown) => group.forEach((p) => p.reject(err)),
    );
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      schedule();
    });
}
