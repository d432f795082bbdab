import type { Request, RequestHandler } from 'express';
import { sha256Hex } from '../../auth/signature.js';
import type { OrderIntake } from '../../services/order-intake.js';
import { placeOrder, type PlaceOrderDeps } from '../../services/place-order.js';
import { ApiError } from '../errors.js';
import { bindLogContext } from '../request-context.js';
import { jsonObjectBody } from '../json-body.js';
import { ORDER_COST_RULE, orderCost } from '../order-cost.js';
import { chargeMore } from '../rate-limit.js';
import { backpressureError, placedCode } from '../order-answers.js';
import { createOrderRequestCheck, ORDER_JSON_LIMITS } from '../order-request.check.js';
import { authOf, bodySha256Of, sendOk } from '../respond.js';
import { SvcStatus } from '../status-codes.js';

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
    const cost = orderCost(body);
    await chargeMore(res, cost - 1, `this order costs ${cost} requests (${ORDER_COST_RULE})`);
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
        // On the request's log line: the order it placed, whether it was placed before, whether it waits.
        bindLogContext(req, {
          orderId: result.order.orderId,
          duplicate: result.duplicate,
          queued: result.queued,
        });
        if (respondAsync) res.set('Preference-Applied', 'respond-async');
        return sendOk(res, placedCode(result), result.order);
      }
    }
  };
}
