import { z } from 'zod';
import { describeIssue, parseInput } from '../domain/readable-input.js';

const DAY_MS = 86_400_000;
/** Longest allowed distance from dateStart to dateEnd (SPEC.md, Limits); exactly 90 days is allowed. */
export const MAX_SPAN_MS = 90 * DAY_MS;

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * Epoch ms of an ISO 8601 date or date-time; no offset means UTC, a bare date is midnight UTC.
 * Digits below the millisecond round up: stored times are whole ms, so `>=` and `<` bounds keep their meaning.
 */
export function parseInstant(text: string): number | null {
  const m = INSTANT.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((part) => Number(part ?? 0)) as Six;
  const fraction = m[7] ?? '';
  const ms = Number(fraction.slice(0, 3).padEnd(3, '0')) + (/[1-9]/.test(fraction.slice(3)) ? 1 : 0);
  const offsetMinutes = parseOffset(m[8]);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59 || offsetMinutes === null) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime() - offsetMinutes * 60_000;
}

function parseOffset(zone: string | undefined): number | null {
  if (zone === undefined || zone.toUpperCase() === 'Z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2) || '0');
  if (hours > 23 || minutes > 59) return null;
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

type Six = [number, number, number, number, number, number];

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 && leap ? 29 : MONTH_DAYS[month - 1]!;
}

const DATE_HINT = 'must be an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T10:00:00.123Z';

const instant = z.string().transform((text, ctx) => {
  const ms = parseInstant(text);
  if (ms !== null) return ms;
  // An unencoded + in an offset arrives as a space.
  const hint = text.includes(' ') ? ' (send a + in the offset as %2B)' : '';
  ctx.issues.push({ code: 'custom', message: DATE_HINT + hint, input: text });
  return z.NEVER;
});

const integer = (message: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) =>
  z.string().transform((text, ctx) => {
    const value = Number(text);
    if (/^-?\d+$/.test(text) && Number.isSafeInteger(value) && value >= min && value <= max) return value;
    ctx.issues.push({ code: 'custom', message, input: text });
    return z.NEVER;
  });

/** A parameter that may appear once: its values arrive as a list, like every parameter. */
const once = <T extends z.ZodType<unknown, string>>(value: T) =>
  z
    .array(z.string())
    .transform((values, ctx) => {
      if (values.length === 1) return values[0]!;
      ctx.issues.push({ code: 'custom', message: 'given more than once; give it once', input: values });
      return z.NEVER;
    })
    .pipe(value)
    .optional();

const bothNumbers = (value: unknown, a: string, b: string): boolean => {
  const record = value as Record<string, unknown>;
  return typeof record[a] === 'number' && typeof record[b] === 'number';
};

/**
 * GET /v1/orders query, validated from every name and all its values (see `queryValues`). Unknown names,
 * repeated single-valued names and bad values are each one issue; date ranges are checked when both ends parse.
 */
export const OrderSearchQuerySchema = z
  .strictObject({
    dateStart: once(instant),
    dateEnd: once(instant),
    itemUpdateDateStart: once(instant),
    itemUpdateDateEnd: once(instant),
    vendorId: once(integer('must be an integer')),
    referenceId: once(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, - or _')),
    orderId: z.array(integer('must be an integer')).optional(),
    orderItemId: z.array(integer('must be an integer')).optional(),
    sortOrder: once(
      z.enum(['ascending', 'descending'], { error: 'must be ascending or descending' }),
    ).default('ascending'),
    limit: once(integer('must be an integer from 1 to 100', 1, 100)).default(20),
    next: once(integer('must be the metadata.next of a previous response', 1)),
  })
  .refine((q) => q.dateStart! <= q.dateEnd!, {
    path: ['dateStart'],
    message: 'must not be after dateEnd',
    when: (payload) => bothNumbers(payload.value, 'dateStart', 'dateEnd'),
  })
  .refine((q) => q.dateStart! > q.dateEnd! || q.dateEnd! - q.dateStart! <= MAX_SPAN_MS, {
    path: ['dateEnd'],
    message: 'must be at most 90 days after dateStart',
    when: (payload) => bothNumbers(payload.value, 'dateStart', 'dateEnd'),
  })
  .refine((q) => q.itemUpdateDateStart! <= q.itemUpdateDateEnd!, {
    path: ['itemUpdateDateStart'],
    message: 'must not be after itemUpdateDateEnd',
    when: (payload) => bothNumbers(payload.value, 'itemUpdateDateStart', 'itemUpdateDateEnd'),
  });

export type OrderSearchQuery = z.output<typeof OrderSearchQuerySchema>;

const dateDoc = (what: string) =>
  z
    .string()
    .optional()
    .describe(`${what}. ISO 8601 date or date-time; no offset means UTC; a bare date is midnight UTC.`);

/** The same parameters as plain types and descriptions, for the OpenAPI document. */
export const OrderSearchQueryParams = z.object({
  dateStart: dateDoc('Orders created at or after this time. Default: 90 days before dateEnd, or before now'),
  dateEnd: dateDoc(
    'Orders created before this time; at most 90 days after dateStart. Default: 90 days after dateStart, or now',
  ),
  itemUpdateDateStart: dateDoc(
    'Orders with items updated at or after this time; only those items are returned',
  ),
  itemUpdateDateEnd: dateDoc('Orders with items updated before this time; only those items are returned'),
  vendorId: z.string().optional().describe('Orders with at least one item of this seller.'),
  referenceId: z.string().optional().describe('Orders placed with this referenceId.'),
  orderId: z
    .array(z.string())
    .optional()
    .describe('Orders with these ids; repeat the parameter for several.'),
  orderItemId: z
    .array(z.string())
    .optional()
    .describe('Orders containing items with these ids; repeat for several; only those items are returned.'),
  sortOrder: z
    .enum(['ascending', 'descending'])
    .default('ascending')
    .describe('By createDate, then orderId.'),
  limit: z.int().min(1).max(100).default(20).describe('Orders per response.'),
  next: z
    .int()
    .positive()
    .optional()
    .describe('metadata.next of the previous page; repeat the same criteria.'),
});

/** The OpenAPI parameter objects of GET /v1/orders, repeated names as exploded form arrays (the default). */
export function orderSearchParameters() {
  const { properties = {} } = z.toJSONSchema(OrderSearchQueryParams, { io: 'input' }) as {
    properties?: Record<string, { description?: string }>;
  };
  return Object.entries(properties).map(([name, { description, ...schema }]) => ({
    name,
    in: 'query',
    required: false,
    description,
    schema,
  }));
}

/** Every name of a raw query string with all its values, decoded as application/x-www-form-urlencoded. */
export function queryValues(rawQuery: string): Record<string, string[]> {
  const values = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(rawQuery)) {
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  // fromEntries defines own properties, so a parameter named __proto__ stays an ordinary unknown name.
  return Object.fromEntries(values);
}

export type QueryParse<T> = { success: true; data: T } | { success: false; messages: string[] };

/** The search criteria of a raw query string, or one message per problem naming the parameter. */
export function parseOrderSearchQuery(rawQuery: string): QueryParse<OrderSearchQuery> {
  // A parameter's values come as a list: a problem names the parameter.
  const parsed = parseInput(OrderSearchQuerySchema, queryValues(rawQuery), {
    params: {},
    at: (path) => path.slice(0, 1),
  });
  return parsed.success
    ? { success: true, data: parsed.data }
    : { success: false, messages: messagesOf(parsed.error) };
}

/** Messages for a query string on a path that takes no parameters: one per name. */
export function unexpectedParams(rawQuery: string): string[] {
  return Object.keys(queryValues(rawQuery)).map((name) => `${name}: unknown query parameter`);
}

function messagesOf(error: z.ZodError): string[] {
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((name) => `${name}: unknown query parameter`)
      : [describeIssue(issue)],
  );
}
