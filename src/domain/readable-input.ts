import { z } from 'zod';
import { UNSTORABLE_TEXT_MESSAGE, unstorableTextPaths } from './storable-text.js';

// A request's input read against its zod schema, each problem one readable line naming its field: what the
// edge answers for a query and what the order check reports for a body, alike.

const article = (type: string): string => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

const SHOWN_KEYS = 10;
const KEY_CHARS = 40;

/** Unknown field names as a client sent them, a few and each cut short: a name may be a megabyte long. */
function unknownFields(keys: readonly string[]): string {
  const shown = keys.slice(0, SHOWN_KEYS).map((key) => {
    const escaped = JSON.stringify(key).slice(1, -1);
    return `'${escaped.length > KEY_CHARS ? `${escaped.slice(0, KEY_CHARS)}…` : escaped}'`;
  });
  const more = keys.length - shown.length;
  return `unknown field${keys.length > 1 ? 's' : ''} ${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** A size limit as read: of a string's characters, an array's entries, or a number itself. */
const bound = (side: 'least' | 'most', limit: number | bigint, origin: string): string =>
  origin === 'string'
    ? `must be at ${side} ${String(limit)} characters`
    : origin === 'array'
      ? `must have at ${side} ${String(limit)} entries`
      : `must be at ${side} ${String(limit)}`;

/** Readable messages for zod's built-in issues; checks with their own message keep it. */
export const readableError: z.core.$ZodErrorMap = (issue) => {
  if (issue.input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_value'))
    return 'is required';
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === null) return 'must not be null';
      return `must be ${article(issue.expected)}`;
    case 'unrecognized_keys':
      return unknownFields(issue.keys);
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      return bound('least', issue.minimum, issue.origin);
    case 'too_big':
      return bound('most', issue.maximum, issue.origin);
    case 'invalid_format':
      return `is not a valid ${issue.format}`;
    default:
      return undefined;
  }
};

/** One readable line per zod issue, naming the field: `listings[1].quantity: must be ...`. */
export function describeIssue(issue: z.core.$ZodIssue, prefix: (string | number)[] = []): string {
  const path = formatPath([...prefix, ...issue.path]);
  return path ? `${path}: ${issue.message}` : issue.message;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

type Path = (string | number)[];

export interface ParseInputOptions {
  /** zod's parse parameters; readable messages by default. */
  params?: z.core.ParseContext<z.core.$ZodIssue>;
  /** The path an issue names for a string found at `path` (a query names the parameter, not its n-th value). */
  at?: (path: Path) => Path;
}

/**
 * `schema.safeParse(input)`, with every string of the input that a store cannot hold (domain/storable-text.ts)
 * one more issue at its path, beside zod's own: every request's input is parsed through here, so such text is
 * refused at the edge (4220 naming the field), alike on both stores, and never reaches a statement.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  { params = { error: readableError }, at = (path) => path }: ParseInputOptions = {},
): z.ZodSafeParseResult<z.output<S>> {
  const parsed = schema.safeParse(input, params);
  const named = new Set<string>();
  const unstorable: z.core.$ZodIssue[] = [];
  for (const found of unstorableTextPaths(input)) {
    const path = at(found);
    if (named.has(formatPath(path))) continue;
    named.add(formatPath(path));
    unstorable.push({ code: 'custom', path, message: UNSTORABLE_TEXT_MESSAGE, input: undefined });
  }
  if (unstorable.length === 0) return parsed;
  const issues = [...(parsed.success ? [] : parsed.error.issues), ...unstorable];
  return { success: false, error: new z.ZodError(issues) } as z.ZodSafeParseResult<z.output<S>>;
}
