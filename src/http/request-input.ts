import { z } from 'zod';
import { UNSTORABLE_TEXT_MESSAGE, unstorableTextPaths } from '../domain/storable-text.js';
import { formatPath } from './errors.js';
import { readableError } from './zod-messages.js';

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

/** The query string exactly as sent: repeated names and unknown ones survive, unlike req.query. */
export function rawQueryOf(req: { originalUrl: string }): string {
  const mark = req.originalUrl.indexOf('?');
  return mark === -1 ? '' : req.originalUrl.slice(mark + 1);
}
