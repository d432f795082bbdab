import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config/config.js';

export type { Logger };

/** What one log line may hold of what a request brought in: a hostile request cannot make a huge line. */
export const LOG_LIMITS = {
  /** Characters of all the strings and names of one logged object together. */
  budget: 16_000,
  /** Characters of one string (a stack trace fits). */
  string: 4_000,
  /** Entries of one array or fields of one object. */
  entries: 100,
  depth: 6,
};

/** Fields whose values never reach a log line, at any depth: a client's secret, a card token, a signature. */
const SECRET_FIELDS = new Set(['secretKey', 'ccToken', 'svc-signature']);
const REDACTED = '[redacted]';

/**
 * A copy of a logged value cut to the limits of LOG_LIMITS: long strings end in `…[N more chars]`, long arrays
 * in `…[N more]`, buffers become their size, the value of a secret field (SECRET_FIELDS) `[redacted]`. Values
 * that are not plain (Errors, Dates) are left to the serializers.
 */
export function boundForLog(value: unknown): unknown {
  return bound(value, { left: LOG_LIMITS.budget }, 0);
}

function bound(value: unknown, budget: { left: number }, depth: number): unknown {
  if (typeof value === 'string') return boundString(value, budget);
  if (typeof value !== 'object' || value === null) return value;
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  if (Array.isArray(value)) {
    if (depth >= LOG_LIMITS.depth) return `[array of ${value.length}]`;
    const out: unknown[] = [];
    for (const entry of value) {
      if (out.length >= LOG_LIMITS.entries || budget.left <= 0) break;
      out.push(bound(entry, budget, depth + 1));
    }
    if (out.length < value.length) out.push(`…[${value.length - out.length} more]`);
    return out;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  if (depth >= LOG_LIMITS.depth) return '[object]';
  const out: Record<string, unknown> = {};
  const keys = Object.keys(value);
  let kept = 0;
  for (const key of keys) {
    if (kept >= LOG_LIMITS.entries || budget.left <= 0) break;
    const field = (value as Record<string, unknown>)[key];
    out[boundString(key, budget)] = SECRET_FIELDS.has(key) ? REDACTED : bound(field, budget, depth + 1);
    kept++;
  }
  if (kept < keys.length) out['…'] = `${keys.length - kept} more fields`;
  return out;
}

function boundString(value: string, budget: { left: number }): string {
  const room = Math.max(0, Math.min(LOG_LIMITS.string, budget.left));
  budget.left -= Math.min(value.length, room) + 1;
  return value.length > room ? `${value.slice(0, room)}…[${value.length - room} more chars]` : value;
}

/**
 * The one pino root of a process; secrets are redacted wherever they appear, and every line is bounded. Both
 * happen in the one copy `boundForLog` makes of each logged object and binding (pino's own `redact` cloned
 * every line a second time, BENCHMARKS.md). `destination`: tests.
 */
export function createLogger(
  config: Pick<Config, 'LOG_LEVEL' | 'LOG_PRETTY'>,
  name: string,
  destination?: DestinationStream,
): Logger {
  const pretty = config.LOG_PRETTY === 'true' || (config.LOG_PRETTY === 'auto' && process.stdout.isTTY);
  const options: LoggerOptions = {
    name,
    level: config.LOG_LEVEL,
    formatters: {
      bindings: (bindings) => boundForLog(bindings) as Record<string, unknown>,
      log: (object) => boundForLog(object) as Record<string, unknown>,
    },
    serializers: {
      // The serializer's object inherits its fields from a prototype: spread it to bound its own fields.
      err: (err: Error) => {
        const serialized: unknown = stdSerializers.err(err);
        return boundForLog(typeof serialized === 'object' ? { ...serialized } : serialized);
      },
      msg: (msg: unknown) => (typeof msg === 'string' ? boundForLog(msg) : msg),
    },
    ...(pretty && !destination ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  };
  return destination ? pino(options, destination) : pino(options);
}
