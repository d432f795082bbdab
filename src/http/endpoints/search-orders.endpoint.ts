import type { Request, RequestHandler } from 'express';
import type { Deps } from '../../deps.js';
import { getClientOrder, searchOrders } from '../../services/search-orders.js';
import { ApiError } from '../errors.js';
import { parseOrderSearchQuery, unexpectedParams } from '../order-search.schema.js';
import { authOf, sendOk } from '../respond.js';
import { SvcStatus } from '../status-codes.js';

/** GET /v1/orders: the search; runs after the auth middleware. */
export function getOrders(deps: Deps): RequestHandler {
  return async (req, res) => {
    const { clientId } = authOf(res);
    const query = parseOrderSearchQuery(rawQueryOf(req));
    if (!query.success) throw new ApiError(SvcStatus.INVALID, query.messages);
    const outcome = await searchOrders(deps, clientId, query.data);
    if (outcome.kind === 'bad-cursor') throw new ApiError(SvcStatus.INVALID, outcome.message);
    sendOk(res, SvcStatus.RETRIEVED, outcome.body);
  };
}

/** GET /v1/orders/{orderId}; runs after the auth middleware. */
export function getOrder(deps: Deps): RequestHandler {
  return async (req, res) => {
    const { clientId } = authOf(res);
    const unexpected = unexpectedParams(rawQueryOf(req));
    if (unexpected.length > 0) throw new ApiError(SvcStatus.INVALID, unexpected);
    const { orderId: sent } = req.params;
    const text = typeof sent === 'string' ? sent : '';
    const orderId = /^\d+$/.test(text) ? Number(text) : 0;
    // 0 is a dry run's id and never stored; other clients' orders are reported exactly like absent ones.
    const order =
      Number.isSafeInteger(orderId) && orderId > 0 ? await getClientOrder(deps, clientId, orderId) : null;
    if (!order) throw new ApiError(SvcStatus.ORDER_NOT_FOUND, `orderId: no order ${text}`);
    sendOk(res, SvcStatus.RETRIEVED, order);
  };
}

/** The query string exactly as sent: repeated names and unknown ones survive, unlike req.query. */
function rawQueryOf(req: Request): string {
  const mark = req.originalUrl.indexOf('?');
  return mark === -1 ? '' : req.originalUrl.slice(mark + 1);
}
