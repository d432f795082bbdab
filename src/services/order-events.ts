import crypto from 'node:crypto';
import type { OrderEvent, OrderEventWrite } from '../store/store.port.js';
import { isoMs, toOrderResponse, type OrderResponse } from './order-view.js';

/** What a webhook receives (CONTRACT.md section 12). */
export interface OrderEventBody {
  eventId: string;
  type: 'order.updated';
  createDate: string;
  /** One more for each change of this order: a receiver drops a delivery older than one it has seen. */
  sequence: number;
  /** The order as GET showed it right after the change. */
  order: OrderResponse;
}

/** A new event for a change about to be written: recorded in the change's transaction, or not at all. */
export const newOrderEvent = (): OrderEventWrite => ({
  eventId: `evt_${crypto.randomBytes(12).toString('hex')}`,
});

/** The body of an event, the same bytes on every delivery and replay of it. */
export function eventBody(event: OrderEvent): string {
  const body: OrderEventBody = {
    eventId: event.eventId,
    type: 'order.updated',
    createDate: isoMs(event.createdAt),
    sequence: event.sequence,
    order: toOrderResponse(event.order, event.items),
  };
  return JSON.stringify(body);
}
