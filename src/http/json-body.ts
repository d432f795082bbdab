import type { Request } from 'express';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/** What a JSON body may hold before it is parsed: 1 MiB of `[{},{},…]` or of nesting costs far more than an order. */
export interface JsonLimits {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Most values: arrays and objects, and the entries after the first of each (counted by their commas). */
  maxValues: number;
  /** The answer to a body over the limits; by default 4000 naming the limit. */
  refuse?: (overflow: JsonOverflow) => ApiError | undefined;
}

export interface JsonOverflow {
  limit: 'depth' | 'values';
  /** The member of the root object in which the limit was passed, when there is one. */
  member?: string;
  /** How many entries of that member's array (or object) were read by then. */
  entries: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Where JSON text passes the limits, found by one pass over its structural bytes without parsing it. */
export function jsonOverflow(raw: Uint8Array, limits: Pick<JsonLimits, 'maxDepth' | 'maxValues'>) {
  let depth = 0;
  let values = 0;
  // The last string of the root object and the member whose value is being read.
  let key: [number, number] = [0, 0];
  let member: [number, number] | undefined;
  let entries = 0;
  const overflow = (limit: JsonOverflow['limit']): JsonOverflow => ({
    limit,
    member: decode(raw, member),
    entries,
  });
  for (let i = 0; i < raw.length; i++) {
    switch (raw[i]) {
      case QUOTE: {
        const start = i++;
        while (i < raw.length && raw[i] !== QUOTE) i += raw[i] === BACKSLASH ? 2 : 1;
        if (depth === 1) key = [start, i + 1];
        break;
      }
      case 0x5b: // [
      case 0x7b: // {
        if (++depth > limits.maxDepth) return overflow('depth');
        if (++values > limits.maxValues) return overflow('values');
        break;
      case 0x5d: // ]
      case 0x7d: // }
        depth--;
        break;
      case 0x2c: // ,
        if (depth === 2) entries++;
        if (++values > limits.maxValues) return overflow('values');
        break;
      case 0x3a: // :
        if (depth === 1) {
          member = key;
          entries = 1;
        }
        break;
    }
  }
  return null;
}

function decode(raw: Uint8Array, span: [number, number] | undefined): string | undefined {
  if (!span) return undefined;
  try {
    const name: unknown = JSON.parse(Buffer.from(raw.subarray(span[0], span[1])).toString('utf8'));
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Where JSON.parse stopped, without its message's quote of the body: that may hold a card token (an unquoted
 * ccToken), and the message goes to the client and into the log.
 */
function whereBroken(err: Error): string {
  const at = /at position (\d+)/.exec(err.message);
  if (at) return ` (at character ${at[1]})`;
  return /end of JSON input/.test(err.message) ? ' (it ends too soon)' : '';
}

function refusal(overflow: JsonOverflow, limits: JsonLimits): ApiError {
  const where = overflow.member === undefined ? 'body' : `body (in ${JSON.stringify(overflow.member)})`;
  const what =
    overflow.limit === 'depth'
      ? `nested deeper than ${limits.maxDepth} levels`
      : `more than ${limits.maxValues} values`;
  return limits.refuse?.(overflow) ?? new ApiError(SvcStatus.MALFORMED, `${where}: ${what}`);
}

/**
 * The request's JSON object: 4150 for another media type, 4000 for a body over `limits`, 4003 for broken JSON,
 * 4000 for a non-object root.
 */
export function jsonObjectBody(req: Request, limits: JsonLimits): Record<string, unknown> {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (!req.is('application/json')) {
    throw new ApiError(SvcStatus.UNSUPPORTED_MEDIA_TYPE, 'Content-Type: must be application/json');
  }
  const overflow = jsonOverflow(raw, limits);
  if (overflow) throw refusal(overflow, limits);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new ApiError(SvcStatus.INVALID_JSON, `body: not valid JSON${whereBroken(err as Error)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ApiError(SvcStatus.MALFORMED, 'body: must be a JSON object (an OrderRequest)');
  }
  return parsed as Record<string, unknown>;
}
