import { z } from 'zod';
import { ItemStatus } from '../domain/item-status.js';
import type { OrderResponse } from '../services/order-view.js';

// Response shapes of SPEC.md for the OpenAPI document (services/order-view.ts builds the responses). They are
// strict so that the response validator of the tests flags a field the document does not describe.

// What toISOString() writes: UTC to the millisecond.
const instant = (description: string) =>
  z.string().meta({
    format: 'date-time',
    pattern: String.raw`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`,
    description: `${description}; UTC, ISO 8601 to the millisecond`,
    examples: ['2026-11-21T10:00:00.000Z'],
  });
const money = (minimum: 'positive' | 'nonnegative', description: string) =>
  z.number().meta({
    ...(minimum === 'positive' ? { exclusiveMinimum: 0 } : { minimum: 0 }),
    multipleOf: 0.01,
    description: `In the order's currency: ${description}`,
  });
const id = (description: string) => z.number().int().meta({ minimum: 0, description });

export const OrderItemSummarySchema = z
  .strictObject({
    orderItemId: id('0 in a dry run'),
    cost: money('positive', 'unit cost of the item'),
    shipcost: money('nonnegative', "the item's share of the order's shipping; 0 when not bought"),
    status: z
      .number()
      .int()
      .meta({
        enum: Object.values(ItemStatus),
        description: 'Item status code (docs/api.md#item-statuses-and-moves)',
      }),
    itemUpdateDate: instant('Last change of the item; absent on creation').optional(),
  })
  .meta({ id: 'OrderItemSummary' });

export const ListingSummarySchema = z
  .strictObject({
    listingId: id('Listing identifier'),
    title: z.string(),
    isbn: z.string(),
    quantity: z.number().int().min(1),
    vendorId: id('Seller identifier'),
    shippingCompany: z.string().optional(),
    shippingTrackingId: z.string().optional(),
    minShippingDays: z.number().int().min(0),
    maxShippingDays: z.number().int().min(0),
    orderItems: z.array(OrderItemSummarySchema),
  })
  .meta({ id: 'ListingSummary' });

export const OrderResponseSchema = z
  .strictObject({
    orderId: id('0 for dry runs'),
    createDate: instant('Creation time'),
    currency: z.enum(['USD', 'EUR', 'GBP']),
    listings: z.array(ListingSummarySchema),
    dryrun: z.boolean(),
    tax: money('nonnegative', 'tax of the whole order; absent when no tax rule applies').optional(),
    taxModel: z.string().optional().describe('SALES_TAX or VAT; absent with tax'),
    referenceId: z.string().optional(),
  })
  .meta({ id: 'OrderResponse' });

export const OrderSearchResponseSchema = z
  .strictObject({
    orders: z.array(OrderResponseSchema),
    metadata: z.strictObject({
      orderResponseSize: z.number().int().min(0),
      next: z.number().int().min(1).optional().describe('Present exactly when more orders match'),
    }),
  })
  .meta({ id: 'OrderSearchResponse' });

export const ErrorResponseSchema = z
  .strictObject({
    requestId: z.string().describe('Svc-RequestId as sent; "" when absent'),
    messages: z.array(z.string()).min(1).describe('One readable line per problem, naming the field'),
  })
  .meta({ id: 'ErrorResponse' });

/** The schemas an OrderResponse names, for an endpoint's OpenAPI components. */
export const orderResponseSchemas = (): z.ZodType[] => [
  OrderItemSummarySchema,
  ListingSummarySchema,
  OrderResponseSchema,
];

// The one OrderResponse type is the service's; the schema that documents it must describe exactly that type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const schemaMatchesOrderResponse: Same<z.output<typeof OrderResponseSchema>, OrderResponse> = true;

export const OrderBatchResultSchema = z
  .strictObject({
    requestId: z.string().describe('The entry’s requestId as sent; "" when it sent none that is text'),
    status: z
      .array(z.number().int().meta({ minimum: 1000, maximum: 5999 }))
      .min(1)
      .describe('The Svc-Status codes this order would get alone, ascending'),
    order: OrderResponseSchema.nullable().describe('The order (priced for a dry run); null when it failed'),
    messages: z
      .array(z.string())
      .min(1)
      .optional()
      .describe('Present when the order failed: one readable line per problem'),
  })
  .meta({ id: 'OrderBatchResult' });

export const OrderBatchResponseSchema = z
  .strictObject({
    results: z.array(OrderBatchResultSchema).describe('One result per order, in the order of the request'),
  })
  .meta({ id: 'OrderBatchResponse' });

export type OrderBatchResult = z.output<typeof OrderBatchResultSchema>;
