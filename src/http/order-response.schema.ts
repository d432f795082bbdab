import { z } from 'zod';
import type { OrderResponse } from '../services/order-view.js';

/** Response shapes of SPEC.md, for the OpenAPI document (responses are built by services/order-view.ts). */
export const OrderItemSummarySchema = z
  .object({
    orderItemId: z.number().int(),
    cost: z.number(),
    shipcost: z.number(),
    status: z.number().int().describe('Item status code (CONTRACT.md section 8)'),
    itemUpdateDate: z.string().optional().describe('UTC ISO 8601 to the millisecond; absent on creation'),
  })
  .meta({ id: 'OrderItemSummary' });

export const ListingSummarySchema = z
  .object({
    listingId: z.number().int(),
    title: z.string(),
    isbn: z.string(),
    quantity: z.number().int(),
    vendorId: z.number().int(),
    shippingCompany: z.string().optional(),
    shippingTrackingId: z.string().optional(),
    minShippingDays: z.number().int(),
    maxShippingDays: z.number().int(),
    orderItems: z.array(OrderItemSummarySchema),
  })
  .meta({ id: 'ListingSummary' });

export const OrderResponseSchema = z
  .object({
    orderId: z.number().int().describe('0 for dry runs'),
    createDate: z.string(),
    currency: z.enum(['USD', 'EUR', 'GBP']),
    listings: z.array(ListingSummarySchema),
    dryrun: z.boolean(),
    tax: z.number().optional(),
    taxModel: z.string().optional(),
    referenceId: z.string().optional(),
  })
  .meta({ id: 'OrderResponse' });

export const OrderSearchResponseSchema = z
  .object({
    orders: z.array(OrderResponseSchema),
    metadata: z.object({
      orderResponseSize: z.number().int(),
      next: z.number().int().optional().describe('present exactly when more orders match'),
    }),
  })
  .meta({ id: 'OrderSearchResponse' });

export const ErrorResponseSchema = z
  .object({ requestId: z.string(), messages: z.array(z.string()).min(1) })
  .meta({ id: 'ErrorResponse' });

// The one OrderResponse type is the service's; the schema that documents it must describe exactly that type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const schemaMatchesOrderResponse: Same<z.output<typeof OrderResponseSchema>, OrderResponse> = true;
