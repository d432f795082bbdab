import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../../config/config.js';
import type { Store } from '../../store/port/store.port.js';

/** What a command may use; the store is opened on first use, so usage errors touch nothing. */
export interface CommandContext {
  store(): Promise<Store>;
  readonly config: Config;
  /** Human-readable notes for the operator, on stderr: stdout carries only the result JSON. */
  readonly out: { note(line: string): void };
}

/** One operator command: `run` returns the JSON value printed on stdout, or throws a CliError. */
export interface Command {
  /** Arguments after the command name, e.g. `--access-key KEY [--decline]`. */
  usage: string;
  summary: string;
  /** It talks to the workers' Redis: refused when neither REDIS_URL nor a running `npm start` says which. */
  needsRedis?: boolean;
  run(args: string[], ctx: CommandContext): Promise<unknown>;
}

/** What a command's module holds: its run (its usage and summary are in admin.commands.ts). */
export type CommandRun = Pick<Command, 'run'>;

export const EXIT_INVALID = 1;
export const EXIT_USAGE = 2;

/** A failure the operator can act on: the message is printed as is, the exit code tells usage from the rest. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: typeof EXIT_INVALID | typeof EXIT_USAGE,
  ) {
    super(message);
  }

  /** The command line itself is wrong: unknown or missing option, bad option value, extra argument. */
  static usage(message: string): CliError {
    return new CliError(message, EXIT_USAGE);
  }

  /** The command line is well formed but names nothing that exists, or carries invalid content. */
  static invalid(message: string): CliError {
    return new CliError(message, EXIT_INVALID);
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `util.parseArgs` in strict mode with exactly the named positionals; any problem becomes a usage CliError.
 */
export function parseCommandArgs<const O extends Options>(
  args: string[],
  options: O,
  positionalNames: readonly string[] = [],
) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (error) {
    // Node appends advice on '--' and dashes that does not fit an operator command; keep the first sentence.
    if (isParseArgsError(error)) throw CliError.usage(error.message.split(/\. |\n/)[0] ?? error.message);
    throw error;
  }
  const { values, positionals } = parsed;
  const extra = positionals[positionalNames.length];
  if (extra !== undefined) throw CliError.usage(`unexpected argument '${extra}'`);
  const missing = positionalNames[positionals.length];
  if (missing !== undefined) throw CliError.usage(`missing ${missing}`);
  return { values, positionals };
}

/** The value of a string option that must be given and not be blank. */
export function requiredOption(value: string | boolean | undefined, name: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw CliError.usage(`missing --${name}`);
  return value.trim();
}

/** A decimal integer > 0 given as an option, e.g. an id. */
export function positiveIntOption(value: string, name: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) {
    throw CliError.usage(`--${name} must be an integer greater than 0, got '${value}'`);
  }
  return number;
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** An ISO 8601 time given as an option, in UTC unless an offset is given; a bare date is midnight UTC. */
export function isoTimeOption(value: string, name: string): number {
  const match = ISO.exec(value);
  const time = match ? Date.parse(match[1] && !match[4] ? `${value}Z` : value) : NaN;
  if (Number.isNaN(time)) throw CliError.usage(`--${name} must be an ISO 8601 time, got '${value}'`);
  return time;
}

function isParseArgsError(error: unknown): error is Error {
  return error instanceof Error && String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_');
}

const DURATION = /^(\d{1,9})(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 } as const;

/** A duration given as an option (`90s`, `30m`, `24h`, `7d`), in ms, at most `maxMs`. */
export function durationOption(value: string, name: string, maxMs: number): number {
  const match = DURATION.exec(value);
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : NaN;
  if (Number.isNaN(ms))
    throw CliError.usage(`--${name} must be a duration like 90s, 30m, 24h or 7d, got '${value}'`);
  if (ms > maxMs) throw CliError.usage(`--${name} must be at most ${maxMs / 86_400_000}d, got '${value}'`);
  return ms;
}
