import { z } from 'zod';
import { ORDER_EVENT_TYPES } from '../store/port/webhooks.port.js';
import { OrderResponseSchema } from './order-response.schema.js';

// The body of a webhook delivery (docs/api.md#webhooks), for the OpenAPI document's `webhooks`.
export const OrderEventSchema = z
  .strictObject({
    eventId: z.string().meta({ pattern: '^evt_[0-9a-f]+$', description: 'Also sent as Svc-Event-Id' }),
    type: z.enum(ORDER_EVENT_TYPES).meta({ description: 'What changed' }),
    createDate: z.string().meta({
      format: 'date-time',
      description: 'When the change was recorded; UTC, ISO 8601 to the millisecond',
    }),
    sequence: z.number().int().meta({
      minimum: 1,
      description: 'One more per change of this order: a receiver drops a delivery older than one it has',
    }),
    order: OrderResponseSchema,
  })
  .meta({
    id: 'OrderEvent',
    description: 'The order as GET /v1/orders/{orderId} showed it right after the change',
  });
