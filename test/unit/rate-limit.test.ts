import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { pino } from 'pino';
import supertest from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { perClientSlots } from '../../src/http/batch-slots.js';
import { pathPattern, type Endpoint } from '../../src/http/endpoints/endpoint.js';
import {
  batchCost,
  placeOrderBatchEndpoint,
  postOrderBatch,
} from '../../src/http/endpoints/place-order-batch.endpoint.js';
import { placeOrderEndpoint, postOrder } from '../../src/http/endpoints/place-order.endpoint.js';
import { errorHandler } from '../../src/http/errors.js';
import { chargeBeforeError, rateLimit } from '../../src/http/rate-limit.js';
import { decodeBody, rawBody } from '../../src/http/raw-body.js';
import { requestContext } from '../../src/http/request-context.js';
import { signedRoutes, type SignedRoute } from '../../src/http/signed-routes.js';
import { createRedis, type RedisClient } from '../../src/redis/redis.js';
import { ORDER_PROBLEMS } from '../../src/services/orders/order-check.js';
import type { PlaceOrderBatchDeps } from '../../src/services/orders/place-order-batch.js';
import type { PlaceOrderDeps } from '../../src/services/orders/place-order.js';

const MAX_BODY = 1024 * 1024;

describe('rate limit when Redis cannot be reached', () => {
  it('lets the request through (fails open) and says so in the log', async () => {
    // Port 1 on loopback: nothing listens, so every command fails at once.
    const redis = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER: false }, 'rate-limit-unit');
    redis.on('error', () => undefined);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const middleware = rateLimit({ redis, prefix: '{unit}', perSecond: 1, clock: Date.now, logger })({});
    const res = {
      locals: { auth: { clientId: 1, accessKey: 'AKunit', requestId: 'r1' } },
    } as unknown as Response;
    let nextCalls = 0;
    const next: NextFunction = (err?: unknown) => {
      expect(err).toBeUndefined();
      nextCalls += 1;
    };
    for (let i = 0; i < 3; i++) await middleware({} as Request, res, next);
    redis.disconnect();
    expect(nextCalls).toBe(3);
    expect(lines.some((line) => line.includes('rate limit skipped: redis unavailable'))).toBe(true);
  });
});

describe('batches in flight per client (BATCH_CONCURRENCY_PER_CLIENT)', () => {
  const request = (clientId: number) => {
    const res = Object.assign(new EventEmitter(), { locals: { auth: { clientId } } }) as unknown as Response;
    return res;
  };
  const enter = (slots: ReturnType<typeof perClientSlots>, res: Response) => {
    let passed = false;
    try {
      slots({} as Request, res, () => (passed = true));
    } catch (err) {
      return (err as { codes: number[]; headers: Record<string, string> }).codes.concat(
        Number((err as { headers: Record<string, string> }).headers['Retry-After']),
      );
    }
    return passed ? 'passed' : 'stuck';
  };

  it('lets two of a client in at once and refuses a third 4291 with Retry-After 1; another client is let in', () => {
    const slots = perClientSlots(2, 'batches');
    const [a, b, c] = [request(1), request(1), request(1)];
    expect(enter(slots, a)).toBe('passed');
    expect(enter(slots, b)).toBe('passed');
    expect(enter(slots, c)).toEqual([4291, 1]);
    expect(enter(slots, request(2))).toBe('passed');
    // Once one answer is sent (or its connection closes), the client has a slot again.
    (a as unknown as EventEmitter).emit('close');
    expect(enter(slots, request(1))).toBe('passed');
    expect(enter(slots, request(1))).toEqual([4291, 1]);
  });
});

describe('the rate-limit cost of a batch', () => {
  it('is one per item of a real order, one per 10 listings of a dry run, at least one per order', () => {
    const order = (listings: number, quantity?: number, dryrun = false) => ({
      listings: Array(listings).fill(quantity === undefined ? {} : { quantity }),
      ...(dryrun ? { dryrun } : {}),
    });
    expect(batchCost([order(1)])).toBe(1);
    expect(batchCost([order(1, 250)])).toBe(250);
    expect(batchCost([order(10), order(11, 2), order(100)])).toBe(10 + 22 + 100);
    // 200 orders of 250 items cost what 50,000 orders of one item would.
    expect(batchCost(Array(200).fill(order(1, 250)))).toBe(50_000);
    expect(batchCost(Array(200).fill(order(1, 250)))).toBe(batchCost(Array(50_000).fill(order(1, 1))));
    // More items than an order may hold costs what the most it may hold does; odd quantities count one.
    expect(batchCost([order(2, 1000), order(3, -1), order(1, 2.5)])).toBe(250 + 3 + 1);
    expect(
      batchCost([order(1, 250, true), order(10, 1, true), order(11, 1, true), order(100, 1, true)]),
    ).toBe(1 + 1 + 2 + 10);
    expect(batchCost([null, 'x', {}, { listings: 'many' }])).toBe(4);
  });
});

// The signed chain as app.ts builds it for a route (signedRoutes), with a stand-in for authentication and the routes'
// own handlers over fake services; Redis is a fake that records each take (its cost and `paid`) and answers it.
describe('rate limit of the routes charged by their body (orders, batches)', () => {
  interface Take {
    cost: number;
    paid: number;
  }
  const OWED = Number.MAX_SAFE_INTEGER;
  interface Setup {
    perSecond?: number;
    /** The wait Redis answers for a take it refuses; 0 lets it through. */
    refuse?: (take: Take) => number;
    /** Redis cannot be reached: every take fails. */
    down?: boolean;
    /** No rate limit (RATE_LIMIT_PER_S=0). */
    limited?: boolean;
    batchSlots?: number;
  }
  const setup = (options: Setup = {}) => {
    const takes: Take[] = [];
    let now = 1_000_000;
    const redis = {
      async evalsha(_sha: string, keyCount: number, ...rest: (string | number)[]) {
        const args = rest.slice(keyCount).map(Number);
        const answers: number[] = [];
        if (options.down) {
          takes.push(...Array.from({ length: keyCount }, () => ({ cost: NaN, paid: NaN })));
          throw new Error('connect ECONNREFUSED 127.0.0.1:1');
        }
        for (let i = 0; i < keyCount; i++) {
          const take = { cost: args[3 + 3 * i]!, paid: args[4 + 3 * i]! };
          takes.push(take);
          const waitMs = options.refuse?.(take) ?? 0;
          answers.push(waitMs > 0 ? 0 : 1, waitMs);
        }
        return answers;
      },
    } as unknown as RedisClient;
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const limit =
      options.limited === false
        ? undefined
        : rateLimit({ redis, prefix: '{unit}', perSecond: options.perSecond ?? 1, clock: () => now, logger });
    const app = express();
    const orderCheck = {
      loadCatalog: async () => ({ listings: new Map(), vendors: new Map() }),
      // Every order refused for its card, or by backpressure when its card says so: nothing goes further.
      check: async (_clientId: number, body: Record<string, unknown>) =>
        body.ccToken === 'busy'
          ? { kind: 'refused', problems: [ORDER_PROBLEMS.busy(false)], retryAfterS: 2 }
          : { kind: 'refused', problems: [ORDER_PROBLEMS.card] },
    };
    const backpressure = { reserve: async () => ({ admitted: 0 }), release: () => undefined };
    const deps = { orderCheck, backpressure, clock: () => now } as unknown as PlaceOrderDeps &
      PlaceOrderBatchDeps;
    const route = (
      endpoint: Pick<Endpoint, 'path' | 'chargedByBody'>,
      ...handlers: RequestHandler[]
    ): SignedRoute => ({
      ...pathPattern(endpoint.path),
      methods: { POST: [...(limit ? [limit(endpoint)] : []), decodeBody(MAX_BODY), ...handlers] },
    });
    const answer = signedRoutes({
      app,
      context: [requestContext(logger, app.request)],
      guards: [
        rawBody(MAX_BODY),
        (req, res, next) => {
          res.locals.auth = { clientId: 1, accessKey: 'AKunit', requestId: req.get('svc-requestid') ?? '' };
          res.locals.bodySha256 = '';
          next();
        },
      ],
      routes: [
        route(placeOrderEndpoint, postOrder(deps)),
        route(
          placeOrderBatchEndpoint,
          perClientSlots(options.batchSlots ?? 2, 'batches'),
          postOrderBatch(deps),
        ),
        route({ path: '/forgetful', chargedByBody: true }, (_req, res) => void res.status(204).end()),
      ],
      beforeError: chargeBeforeError,
      onError: errorHandler,
    });
    const server = (req: IncomingMessage, res: ServerResponse) => {
      if (!answer(req, res)) res.writeHead(404).end();
    };
    const post = (path: string, body: unknown) =>
      supertest(server)
        .post(`/v1${path}`)
        .set('Content-Type', 'application/json')
        .set('Svc-RequestId', 'r1')
        .send(typeof body === 'string' ? body : JSON.stringify(body));
    return { takes, lines, post, tick: (ms: number) => (now += ms) };
  };
  const order = (...quantities: number[]) => ({
    ccToken: 'tok',
    listings: quantities.map((quantity, i) => ({ listingId: 1000 + i, quantity })),
  });

  it('when a real order of 2 items comes, then its whole cost is one take of 2, none on arrival', async () => {
    const { takes, post } = setup();
    const res = await post('/orders', order(1, 1));
    expect(res.headers['svc-status']).toBe('4001');
    expect(takes).toEqual([{ cost: 2, paid: 0 }]);
  });

  it('when an order of one item, or a dry run of 11 listings, comes, then it is one take of its cost', async () => {
    const { takes, post } = setup();
    await post('/orders', order(1));
    await post('/orders', { ...order(...Array<number>(11).fill(1)), dryrun: true });
    expect(takes).toEqual([
      { cost: 1, paid: 0 },
      { cost: 2, paid: 0 },
    ]);
  });

  it('when a body cannot be read (not JSON, not an object, over its limits), then it is one take of 1 before its error', async () => {
    const { takes, post } = setup();
    expect((await post('/orders', '{"listings": [')).headers['svc-status']).toBe('4003');
    expect((await post('/orders', '[1, 2]')).headers['svc-status']).toBe('4000');
    // Past the JSON limits in its listings: refused before it is parsed.
    const tooMany = { listings: Array<object>(10_001).fill({}) };
    expect((await post('/orders', tooMany)).headers['svc-status']).toBe('4002');
    expect((await post('/order-batches', { orders: 'many' })).headers['svc-status']).toBe('4220');
    expect(takes).toEqual(Array(4).fill({ cost: 1, paid: 0 }));
  });

  it('when the bucket is empty, then a body that cannot be read is 4291 with Retry-After, as any request', async () => {
    const { takes, post } = setup({ refuse: () => 1500 });
    const res = await post('/orders', '{"listings": [');
    expect(res.status).toBe(429);
    expect(res.headers['svc-status']).toBe('4291');
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body.messages).toEqual(['Svc-Access-Key: more than 1 requests per second; retry after 2 s']);
    expect(takes).toEqual([{ cost: 1, paid: 0 }]);
  });

  it('when an order costs more than the bucket holds, then it is 4291 naming its cost, with the wait for all of it', async () => {
    // The bucket 0.5 token in debt: 2.5 s until the 2 tokens an order of 2 items costs, 1.5 s until the first.
    const { takes, post, tick } = setup({ refuse: (take) => (take.cost === 2 ? 2500 : 0) });
    const res = await post('/orders', order(1, 1));
    expect(res.status).toBe(429);
    expect(res.headers['svc-status']).toBe('4291');
    expect(res.headers['retry-after']).toBe('3');
    expect(res.body.messages).toEqual([
      'Svc-Access-Key: this order costs 2 requests (one per item of a real order, one per 10 listings of a dry run, at least one per order), more than 1 requests per second allow now; retry after 3 s',
    ]);
    // Until its first token is back the process refuses the key itself, as any refused key, without a take.
    tick(1498);
    const again = await post('/orders', '{');
    expect(again.headers['svc-status']).toBe('4291');
    expect(again.body.messages).toEqual(['Svc-Access-Key: more than 1 requests per second; retry after 1 s']);
    expect(takes).toEqual([{ cost: 2, paid: 0 }]);
    tick(1);
    expect((await post('/orders', order(1))).headers['svc-status']).toBe('4001');
    expect(takes).toEqual([
      { cost: 2, paid: 0 },
      { cost: 1, paid: 0 },
    ]);
  });

  it('when a batch costs more than the bucket holds, then it is 4291 naming its cost; a batch of one token as any request', async () => {
    const { post } = setup({ perSecond: 5, refuse: () => 300 });
    const batchOf = (...orders: object[]) => ({
      orders: orders.map((o, i) => ({ ...o, requestId: `e${i}` })),
    });
    const costly = await post('/order-batches', batchOf(order(2), order(1, 1)));
    expect(costly.headers['retry-after']).toBe('1');
    expect(costly.body.messages[0]).toMatch(/^Svc-Access-Key: this batch costs 4 requests \(one per item/);
    const light = await post('/order-batches', batchOf(order(1)));
    expect(light.body.messages).toEqual(['Svc-Access-Key: more than 5 requests per second; retry after 1 s']);
  });

  it('when a real order is refused by backpressure (5030), then it keeps one token and gives the rest back', async () => {
    const { takes, post } = setup();
    const res = await post('/orders', { ...order(4), ccToken: 'busy' });
    expect(res.headers['svc-status']).toBe('5030');
    expect(takes).toEqual([
      { cost: 4, paid: 0 },
      { cost: -3, paid: OWED },
    ]);
  });

  it('when a batch comes, then its whole cost is one take, and its entries refused by backpressure give theirs back but one token', async () => {
    const { takes, post } = setup({ perSecond: 5 });
    const body = {
      orders: [
        { ...order(2), requestId: 'a' },
        { ...order(3), ccToken: 'busy', requestId: 'b' },
      ],
    };
    const res = await post('/order-batches', body);
    expect(res.headers['svc-status']).toBe('2004');
    expect(takes).toEqual([
      { cost: 5, paid: 0 },
      { cost: -3, paid: OWED },
    ]);
  });

  it('when a batch is refused a slot (BATCH_CONCURRENCY_PER_CLIENT), then it costs one token, and an empty bucket answers first', async () => {
    let empty = false;
    const { takes, post } = setup({ batchSlots: 0, refuse: () => (empty ? 1500 : 0) });
    const refused = await post('/order-batches', { orders: [{ ...order(3), requestId: 'a' }] });
    expect(refused.headers['svc-status']).toBe('4291');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body.messages[0]).toMatch(/more than 0 batches of this client at once/);
    empty = true;
    const spent = await post('/order-batches', { orders: [{ ...order(3), requestId: 'a' }] });
    expect(spent.headers['retry-after']).toBe('2');
    expect(spent.body.messages).toEqual(['Svc-Access-Key: more than 1 requests per second; retry after 2 s']);
    expect(takes).toEqual(Array(2).fill({ cost: 1, paid: 0 }));
  });

  it('when Redis cannot be reached, then orders go on uncharged (fails open) and it says so in the log', async () => {
    const { takes, lines, post } = setup({ down: true });
    expect((await post('/orders', order(2, 1))).headers['svc-status']).toBe('4001');
    expect((await post('/orders', '{')).headers['svc-status']).toBe('4003');
    expect(takes).toHaveLength(2);
    const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toEqual(Array(2).fill('rate limit skipped: redis unavailable'));
  });

  it('when a route charged by its body answers without its charge, then one token is taken as it closes, and a warning logged', async () => {
    const { takes, lines, post } = setup();
    // An order that took its cost takes nothing more as it closes: before the other's charge, nothing comes.
    await post('/orders', order(1, 1));
    expect((await post('/forgetful', {})).status).toBe(204);
    await vi.waitFor(() => expect(takes).toHaveLength(2));
    expect(takes).toEqual([
      { cost: 2, paid: 0 },
      { cost: 1, paid: OWED },
    ]);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'rate limit: answered without its charge; one token taken',
    ]);
  });

  it('when the rate limit is off, then nothing is taken and every answer is the same', async () => {
    const { takes, post } = setup({ limited: false });
    expect((await post('/orders', order(2, 1))).headers['svc-status']).toBe('4001');
    expect((await post('/orders', '{')).headers['svc-status']).toBe('4003');
    expect((await post('/orders', { ...order(4), ccToken: 'busy' })).headers['svc-status']).toBe('5030');
    expect(takes).toEqual([]);
  });
});
