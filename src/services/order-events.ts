import crypto from 'node:crypto';
import type { OrderEvent, OrderEventType, OrderEventWrite } from '../store/port/store.port.js';
import { captureTraceContext } from '../tracing/tracing.js';
import { isoMs, toOrderResponse, type OrderResponse } from './order-view.js';

/** What a webhook receives (docs/api.md#webhooks). */
export interface OrderEventBody {
  eventId: string;
  type: OrderEventType;
  createDate: string;
  /** One more for each change of this order: a receiver drops a delivery older than one it has seen. */
  sequence: number;
  /** The order as GET showed it right after the change. */
  order: OrderResponse;
}

/**
 * A new event for a change about to be written: recorded in the change's transaction, or not at all. A new
 * event type is a new OrderEventType and the producer that passes it here.
 */
export const newOrderEvent = (type: OrderEventType = 'order.updated'): OrderEventWrite => ({
  eventId: `evt_${crypto.randomBytes(12).toString('hex')}`,
  type,
  traceContext: captureTraceContext(),
});

/** The body of an event, the same bytes on every delivery and replay of it. */
export function eventBody(event: OrderEvent): string {
  const body: OrderEventBody = {
    eventId: event.eventId,
    type: event.type,
    createDate: isoMs(event.createdAt),
    sequence: event.sequence,
    order: toOrderResponse(event.order, event.items),
  };
  return JSON.stringify(body);
}
