// Text both stores hold alike. PostgreSQL refuses U+0000 in text and jsonb, and an unpaired UTF-16 surrogate in
// jsonb (in text both it and SQLite turn one into U+FFFD); every other code point is held unchanged by both. Such
// text is refused where input comes in, so that the two stores accept and refuse the same, and one client's text
// never reaches a statement it shares with others.

/** A surrogate that is not half of a pair. */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const UNSTORABLE_TEXT_MESSAGE = 'must not hold U+0000 or an unpaired UTF-16 surrogate';

export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text);
}

/**
 * Where a parsed JSON value (or a query's values) holds a string that `isStorableText` refuses: one path per such
 * string, at most `max`, in document order. Keys are not looked at: an unknown field is refused as unknown.
 */
export function unstorableTextPaths(value: unknown, max = 50): (string | number)[][] {
  const found: (string | number)[][] = [];
  const stack: [unknown, (string | number)[]][] = [[value, []]];
  while (stack.length > 0 && found.length < max) {
    const [current, path] = stack.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) found.push(path);
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], [...path, i]]);
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], [...path, entries[i]![0]]]);
    }
  }
  return found;
}
