import type { RequestHandler, Response } from 'express';
import type { Logger } from '../logger.js';
import { ApiError } from './errors.js';
import { authOf } from './respond.js';
import { SvcStatus } from './status-codes.js';
import {
  createRateLimiter,
  OWED,
  type RateDecision,
  type TokenBucketOptions,
} from '../redis/token-bucket.js';
import type { Endpoint } from './endpoints/endpoint.js';

export interface RateLimitOptions extends TokenBucketOptions {
  logger: Logger;
}

/** What the rate limit takes of one request after it is let in, for the route's helpers below. */
interface Charges {
  /** Taken (or refused) already: on arrival, or by one of these; a request charged by its body starts without. */
  readonly charged: boolean;
  /** The request's whole cost, less what it paid already; 4291 naming `what` when the key's bucket refuses. */
  cost(tokens: number, what: string): Promise<void>;
  /** `tokens` more whatever the bucket holds (in debt if need be), or given back when negative. */
  owed(tokens: number): Promise<void>;
  /** Before an error is answered: one token if nothing was taken yet; the error to answer (4291 when refused). */
  beforeError(err: unknown): Promise<unknown> | undefined;
}
const CHARGES = Symbol('rate limit charges');
const chargesOf = (res: Response) => (res.locals as { [CHARGES]?: Charges })[CHARGES];

/**
 * Takes a request's whole cost, `tokens`, once its body is read and the cost known (an order, a batch: a route
 * charged by its body, Endpoint.chargedByBody, which took nothing on arrival), in one take, or throws 4291 naming
 * `what` cost them (a cost of one is refused as any request is). Of a request that paid on arrival only the rest is
 * taken. Nothing when the rate limit is off.
 */
export async function chargeCost(res: Response, tokens: number, what: string): Promise<void> {
  await chargesOf(res)?.cost(tokens, what);
}

/**
 * For a request whose cost is known only once its work is done (a page read: by its items): takes `tokens` more
 * from the key's bucket whatever it holds, leaving it in debt that the key's next requests wait out. Never
 * refuses: the work is done, and the answer is sent. Nothing when the rate limit is off.
 */
export async function chargeOwed(res: Response, tokens: number): Promise<void> {
  const charges = chargesOf(res);
  if (charges && tokens > 0) await charges.owed(tokens);
}

/**
 * Gives back `tokens` this request was charged for work it then did not do (orders refused by backpressure),
 * never filling the key's bucket past full. Nothing when the rate limit is off.
 */
export async function giveBack(res: Response, tokens: number): Promise<void> {
  const charges = chargesOf(res);
  if (charges && tokens > 0) await charges.owed(-tokens);
}

/**
 * Asked before an error of a signed request is answered (signed-routes.ts): a request charged by its body that
 * fails before its cost is taken (a body that cannot be read, a guard of its route) is charged one token, as if on
 * arrival, and is answered 4291 instead when its key's bucket refuses it. Undefined when there is nothing to take.
 */
export function chargeBeforeError(err: unknown, res: Response): Promise<unknown> | undefined {
  return chargesOf(res)?.beforeError(err);
}

/** Keys remembered as refused at once (see rateLimit); past this many, the longest remembered is forgotten. */
const MAX_REFUSED_KEYS = 10_000;

/**
 * 4291 with `Retry-After` (whole seconds, at least 1) once an access key has spent its bucket. Runs after
 * authentication, so only a key's owner can spend its budget. Fails open when Redis is unreachable: the
 * limit protects the service and should not be the reason every client is refused. Made once, it gives each
 * route its middleware: one token taken on arrival, before the route's handlers; or, for a route charged by its
 * body (Endpoint.chargedByBody), nothing taken yet, and its handler takes the whole cost in one take once it has
 * read the body (chargeCost). Such a request answered before (its body unreadable, a guard of its route) is charged
 * one token first (chargeBeforeError), refusable as on arrival; should one end without either (a route's bug, a
 * caller gone), one token is taken when it closes, whatever the bucket holds, and a request answered so is logged.
 *
 * A key refused is refused again by this process, without asking Redis, until its bucket holds a token again:
 * processes add tokens only by giving back what a request of theirs was charged (giveBack, which forgets the key
 * here; the refill follows the clock that the bucket already takes the processes to share), so until then Redis
 * would refuse it too, and a caller sending in a loop past its limit costs Redis nothing more. The time is the one
 * Redis gave less its rounding up (1 ms) and less what the tokens beyond the first take to come, counted from this
 * process's clock read before asking: a key is never refused here longer than Redis would refuse a request of one
 * token.
 */
export function rateLimit(
  options: RateLimitOptions,
): (route: Pick<Endpoint, 'chargedByBody'>) => RequestHandler {
  const take = createRateLimiter(options);
  const capacity = options.perSecond * 2;
  const refusedUntil = new Map<string, number>();
  const refusal = (retryAfterMs: number, what?: string) => {
    const retryAfterS = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return new ApiError(
      SvcStatus.RATE_LIMITED,
      `Svc-Access-Key: ${what ?? `more than ${options.perSecond} requests per second`}; retry after ${retryAfterS} s`,
      { 'Retry-After': String(retryAfterS) },
    );
  };
  const spend = async (accessKey: string, cost: number, paid: number, what?: string) => {
    const asked = options.clock();
    let decision: RateDecision;
    try {
      decision = await take(accessKey, cost, paid);
    } catch (err) {
      options.logger.warn({ err: (err as Error).message }, 'rate limit skipped: redis unavailable');
      return;
    }
    if (decision.allowed) return;
    // Redis waited for `need` tokens (see token-bucket.ts); the first of them, what any request needs, comes sooner.
    const need = Math.min(cost, capacity - paid);
    const firstTokenMs = decision.retryAfterMs - 1 - ((need - 1) * 1000) / options.perSecond;
    if (paid === 0 && firstTokenMs > 0) {
      refusedUntil.delete(accessKey);
      if (refusedUntil.size >= MAX_REFUSED_KEYS) refusedUntil.delete(refusedUntil.keys().next().value!);
      refusedUntil.set(accessKey, asked + firstTokenMs);
    }
    throw refusal(decision.retryAfterMs, what);
  };
  /** Throws 4291 while `accessKey` is remembered as refused; forgets it once its time has passed. */
  const stillRefused = (accessKey: string) => {
    const until = refusedUntil.get(accessKey);
    if (until === undefined) return;
    const waitMs = until - options.clock();
    if (waitMs > 0) throw refusal(waitMs);
    refusedUntil.delete(accessKey);
  };
  /** The charges of a request of `accessKey` that paid `paid` tokens on arrival. */
  const chargesFor = (accessKey: string, paid: number): Charges => {
    let charged = paid > 0;
    return {
      get charged() {
        return charged;
      },
      cost(tokens, what) {
        charged = true;
        const before = paid;
        if (tokens <= before) return Promise.resolve();
        paid = tokens;
        const named =
          tokens > 1 ? `${what}, more than ${options.perSecond} requests per second allow now` : undefined;
        return spend(accessKey, tokens - before, before, named);
      },
      async owed(tokens) {
        charged = true;
        paid += Math.max(0, tokens);
        // Tokens given back may let the key in before the time remembered: forget it.
        if (tokens < 0) refusedUntil.delete(accessKey);
        await spend(accessKey, tokens, OWED);
      },
      beforeError(err) {
        if (charged) return undefined;
        charged = true;
        paid = 1;
        return spend(accessKey, 1, 0).then(
          () => err,
          (refused: unknown) => refused,
        );
      },
    };
  };
  const onArrival: RequestHandler = async (_req, res, next) => {
    const { accessKey } = authOf(res);
    stillRefused(accessKey);
    await spend(accessKey, 1, 0);
    (res.locals as { [CHARGES]?: Charges })[CHARGES] = chargesFor(accessKey, 1);
    next();
  };
  const byBody: RequestHandler = (req, res, next) => {
    const { accessKey } = authOf(res);
    stillRefused(accessKey);
    const charges = chargesFor(accessKey, 0);
    (res.locals as { [CHARGES]?: Charges })[CHARGES] = charges;
    // The safety net: no request of such a route ends uncharged.
    const owedOnClose = () => {
      if (charges.charged) return;
      if (res.headersSent)
        req.log.warn({ path: req.path }, 'rate limit: answered without its charge; one token taken');
      void charges.owed(1);
    };
    if (res.closed) owedOnClose();
    else res.once('close', owedOnClose);
    next();
  };
  return (route) => (route.chargedByBody ? byBody : onArrival);
}
