interface Pending<I, O> {
  input: I;
  resolve: (result: O) => void;
  reject: (err: unknown) => void;
}

export interface GroupOptions<I, O> {
  /** Two inputs with the same key never share a group: the second waits for the next. */
  keyOf?: (input: I) => string;
  /** One call on its own, for a member of a group that failed; by default `many` of that input alone. */
  alone?: (input: I) => Promise<O>;
  /** A failure that each member alone would meet too (the store away): the whole group fails with it, none retried. */
  failsEveryone?: (err: unknown) => boolean;
  /**
   * False where a failed group may have applied part of itself and a member applied again alone would count twice
   * (a Redis script is not rolled back by an error midway): then every member fails with the group's error.
   */
  retryAlone?: boolean;
}

/**
 * Calls asked for in one turn of the event loop (requests that arrived together, jobs whose payments came back
 * together) applied by one `many` (one transaction, one round trip) instead of one each: a group commit. Each
 * caller's promise settles only once `many` has, with its own result, so nothing is acknowledged before it is
 * done.
 *
 * One client's call must never fail another's: when `many` fails for a group of several, nothing of it was kept
 * (one transaction), and each call runs again alone, exactly once, answering (or failing) for itself; so a call
 * whose own input the store refuses fails alone. `many` and `alone` must therefore be safe to apply twice (an
 * idempotency key, a guarded update), as every call is under at-least-once delivery anyway: a group cut off at
 * its commit may have kept everything. A failure that `failsEveryone` names fails the group whole instead.
 *
 * Two inputs with the same `keyOf` never share a group (the second waits for the next), so that a concurrent
 * twin is applied exactly as it would be one after the other.
 */
export function groupCalls<I, O>(
  many: (inputs: readonly I[]) => Promise<O[]>,
  maxGroup: number,
  options: GroupOptions<I, O> = {},
): (input: I) => Promise<O> {
  const { keyOf, failsEveryone, retryAlone = true } = options;
  const alone = options.alone ?? ((input: I) => many([input]).then((results) => results[0]!));
  let waiting: Pending<I, O>[] = [];
  let scheduled = false;

  const failed = (group: Pending<I, O>[], err: unknown) => {
    if (group.length === 1 || !retryAlone || failsEveryone?.(err)) {
      for (const p of group) p.reject(err);
      return;
    }
    for (const p of group) Promise.resolve(p.input).then(alone).then(p.resolve, p.reject);
  };

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
    Promise.resolve(group.map((p) => p.input))
      .then(many)
      .then(
        (results) => group.forEach((p, i) => p.resolve(results[i]!)),
        (err: unknown) => failed(group, err),
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
