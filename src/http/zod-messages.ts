import type { z } from 'zod';

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
      return issue.origin === 'string'
        ? `must be at least ${String(issue.minimum)} characters`
        : issue.origin === 'array'
          ? `must have at least ${String(issue.minimum)} entries`
          : `must be at least ${String(issue.minimum)}`;
    case 'too_big':
      return issue.origin === 'string'
        ? `must be at most ${String(issue.maximum)} characters`
        : issue.origin === 'array'
          ? `must have at most ${String(issue.maximum)} entries`
          : `must be at most ${String(issue.maximum)}`;
    case 'invalid_format':
      return `is not a valid ${issue.format}`;
    default:
      return undefined;
  }
};
