import { z } from 'zod';
import { toCents } from '../../domain/money.js';
import { isCountryCode } from '../../domain/countries.js';

// The request schemas of POST /v1/orders: what a body must be (the order check reads it with them), and what
// the OpenAPI document describes (each named with .meta({ id })).

export const MAX_LISTINGS = 100;
export const MAX_ITEMS = 250;
/** An order's idempotency key: Svc-RequestId, or a batch entry's requestId. */
export const MAX_REQUEST_ID_LENGTH = 36;

const text = (max = 200) => z.string().min(1).max(max);

// The metadata tells the OpenAPI document what the refinement checks: JSON Schema cannot see into a refine.
const money = z
  .number()
  .refine((n) => n > 0 && toCents(n) !== null, 'must be a positive amount with at most two decimals')
  .meta({ exclusiveMinimum: 0, multipleOf: 0.01, description: "In the domain's currency" });

export const AddressSchema = z
  .strictObject({
    name: text(),
    address1: text(),
    address2: text().nullable().optional(),
    city: text(),
    provstate: z
      .string()
      .regex(/^[A-Z0-9]{2,3}$/, 'must be a 2- or 3-character ISO 3166-2 subdivision code')
      .optional(),
    country: z
      .string()
      .refine(isCountryCode, 'must be an ISO 3166-1 alpha-3 country code')
      .meta({ pattern: '^[A-Z]{3}$', description: 'ISO 3166-1 alpha-3 code, e.g. GBR' }),
    zipcode: text(),
    phone: text(),
  })
  .meta({ id: 'Address' });

export const RequestedListingSchema = z
  .strictObject({
    listingId: z.number().int('must be an integer').positive('must be a positive integer'),
    quantity: z
      .number()
      .int('must be an integer')
      .min(1, `must be an integer from 1 to ${MAX_ITEMS}`)
      .meta({ maximum: MAX_ITEMS, description: `At most ${MAX_ITEMS} items in the whole order` }),
    maxPrice: money.optional(),
  })
  .meta({ id: 'RequestedListing' });

export function orderRequestSchema(domains: readonly string[]) {
  return z
    .strictObject({
      shipAddr: AddressSchema,
      billAddr: AddressSchema,
      ccToken: text(100),
      listings: z
        .array(RequestedListingSchema)
        .min(1, 'must have at least one listing')
        .max(MAX_LISTINGS, `must have at most ${MAX_LISTINGS} listings`)
        .superRefine(checkListings),
      shippingMode: z.enum(['S', 'P']),
      domain: z.enum(domains as [string, ...string[]]),
      totalMaxPrice: money.optional(),
      dryrun: z.boolean().optional(),
      referenceId: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, - or _')
        .optional(),
    })
    .meta({ id: 'OrderRequest' });
}

/** The schemas an OrderRequest names, for an endpoint's OpenAPI components. */
export const orderRequestSchemas = (domains: readonly string[]): z.ZodType[] => [
  AddressSchema,
  RequestedListingSchema,
  orderRequestSchema(domains),
];

// On the array, not the order, so that it runs even when another field of the order is bad.
function checkListings(listings: { listingId: number; quantity: number }[], ctx: z.RefinementCtx): void {
  const total = listings.reduce((sum, l) => sum + l.quantity, 0);
  if (total > MAX_ITEMS)
    ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_ITEMS} items in all` });
  const seen = new Set<number>();
  listings.forEach((l, i) => {
    if (seen.has(l.listingId)) {
      ctx.addIssue({
        code: 'custom',
        path: [i, 'listingId'],
        message: `listing ${l.listingId} appears more than once`,
      });
    }
    seen.add(l.listingId);
  });
}

export type OrderRequest = z.infer<ReturnType<typeof orderRequestSchema>>;
export type Address = z.infer<typeof AddressSchema>;

/** The 'listings' problems: the listings array itself, a quantity below one, too many items in all. */
export function isListingsProblem(issue: z.core.$ZodIssue): boolean {
  const [head, index, field] = issue.path;
  if (head !== 'listings') return false;
  if (issue.path.length === 1) return issue.code !== 'invalid_type';
  return typeof index === 'number' && field === 'quantity' && issue.code === 'too_small';
}
