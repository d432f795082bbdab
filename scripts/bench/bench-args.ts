// A bench's command-line options, declared by their defaults.
import { parseArgs } from 'node:util';

type Default = string | boolean | undefined;

/** What each option reads as: a flag a boolean, an option with a default a string, one without maybe nothing. */
export type BenchValues<T extends Record<string, Default>> = {
  [K in keyof T]: T[K] extends boolean ? boolean : T[K] extends string ? string : string | undefined;
};

/**
 * The command line's options from their defaults: a string makes `--name value` (undefined: one with no default),
 * a boolean a flag. An unknown option or a missing value fails as parseArgs fails.
 */
export function benchArgs<T extends Record<string, Default>>(defaults: T): BenchValues<T> {
  const options = Object.fromEntries(
    Object.entries(defaults).map(([name, value]) => [
      name,
      typeof value === 'boolean'
        ? { type: 'boolean' as const, default: value }
        : value === undefined
          ? { type: 'string' as const }
          : { type: 'string' as const, default: value },
    ]),
  );
  return parseArgs({ options }).values as BenchValues<T>;
}
