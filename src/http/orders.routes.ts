import type { Request, RequestHandler } from 'express';
import { sha256Hex } from '../auth/signature.js';
import { placeOrder, type PlaceOrderDeps } from '../services/place-order.js';
import { jsonObjectBody } from './json-body.js';
import { authOf, bodySha256Of, sendOk } from './respond.js';

/** `Prefer: respond-async` (RFC 7240) asks for the answer without waiting for the worker. */
function prefersAsync(req: Request): boolean {
  return (req.get('prefer') ?? '')
    .split(',')
    .some((p) => p.trim().toLowerCase().split(';')[0] === 'respond-async');
}

/** POST /v1/orders */
export function postOrder(deps: PlaceOrderDeps): RequestHandler {
  return async (req, res) => {
    const body = jsonObjectBody(req);
    const respondAsync = prefersAsync(req);
    const auth = authOf(res);
    const result = await placeOrder(deps, {
      auth,
      body,
      requestHash: sha256Hex(`${req.method}\n${req.path}\n${bodySha256Of(res)}`),
      respondAsync,
      log: req.log,
    });
    if (respondAsync && !result.order.dryrun) res.set('Preference-Applied', 'respond-async');
    sendOk(res, result.code, result.order);
  };
}
