import type { Request, RequestHandler } from 'express';
import { sha256Hex } from '../auth/signature.js';
import type { OrderIntake } from '../services/order-intake.js';
import { placeOrder, type PlaceOrderDeps } from '../services/place-order.js';
import { ApiError } from './errors.js';
import { jsonObjectBody } from './json-body.js';
import { createOrderRequestCheck, ORDER_JSON_LIMITS } from './order-request.check.js';
import { authOf, bodySha256Of, sendOk } from './respond.js';
import { SvcStatus } from './status-codes.js';

/** `Prefer: respond-async` (RFC 7240) asks for the answer without waiting for the worker. */
function prefersAsync(req: Request): boolean {
  return (req.get('prefer') ?? '')
    .split(',')
    .some((p) => p.trim().toLowerCase().split(';')[0] === 'respond-async');
}

/** POST /v1/orders */
export function postOrder(deps: PlaceOrderDeps & { intake: OrderIntake }): RequestHandler {
  const checkOrderRequest = createOrderRequestCheck(deps.intake);
  return async (req, res) => {
    const body = jsonObjectBody(req, ORDER_JSON_LIMITS);
    const respondAsync = prefersAsync(req);
    const { clientId, requestId } = authOf(res);
    const checked = await checkOrderRequest(clientId, body);
    const result = await placeOrder(deps, {
      clientId,
      requestId,
      requestHash: sha256Hex(`${req.method}\n${req.path}\n${bodySha256Of(res)}`),
      checked,
      respondAsync,
      log: req.log,
    });
    switch (result.kind) {
      case 'dry-run':
        return sendOk(res, SvcStatus.DRY_RUN_OK, result.order);
      case 'conflict':
        throw new ApiError(
          SvcStatus.REQUEST_ID_CONFLICT,
          'Svc-RequestId: already used by this access key for a different request',
        );
      case 'busy':
        throw backpressureError(result);
      case 'placed': {
        if (respondAsync) res.set('Preference-Applied', 'respond-async');
        const code = result.duplicate && result.queued ? SvcStatus.DUPLICATE_PROCESSING : SvcStatus.CREATED;
        return sendOk(res, code, result.order);
      }
    }
  };
}

/** 5030 with Retry-After: too many orders (or too many of this client's) wait for the workers; nothing stored. */
export function backpressureError({
  retryAfterS,
  ofClient,
}: {
  retryAfterS: number;
  ofClient: boolean;
}): ApiError {
  const what = ofClient
    ? "too many of this client's orders are waiting to be processed (its share of the backlog)"
    : 'too many orders are waiting to be processed';
  return new ApiError(SvcStatus.UNAVAILABLE, `${what}; nothing was stored, retry after Retry-After seconds`, {
    'Retry-After': String(retryAfterS),
  });
}
