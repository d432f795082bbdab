// One client sending synchronous orders at a fixed rate, each on its schedule whatever the answers before it
// (an open loop): a service slowed by something else (a backup) shows in the orders' latency rather than in
// fewer orders sent, as a closed loop of a few callers would hide it.
import { postSigned, type Buyer } from './buyer.js';
import { twoListingOrder } from './lone-orders.js';
import { sleep } from './samples.js';
import type { CatalogListing } from '../../src/store/port/store.port.js';

/** An order answered 2010, with when it was sent and answered (performance.now() ms). */
export interface AnsweredOrder {
  orderId: number;
  sentAt: number;
  answeredAt: number;
}

/** An order not answered 2010 (another Svc-Status, or no answer), with when it was sent. */
export interface FailedOrder {
  sentAt: number;
  what: string;
}

export interface SteadyOrders {
  answered: AnsweredOrder[];
  failed: FailedOrder[];
  /** Stops sending and resolves once every order in flight is answered. */
  stop(): Promise<void>;
}

/** Starts sending real orders of two of `listings` to `baseUrl` as `buyer`, `perSecond` a second. */
export function steadyOrders(
  baseUrl: string,
  buyer: Buyer,
  listings: readonly CatalogListing[],
  perSecond: number,
): SteadyOrders {
  const answered: AnsweredOrder[] = [];
  const failed: FailedOrder[] = [];
  const inFlight = new Set<Promise<void>>();
  let stopping = false;

  async function send(): Promise<void> {
    const body = twoListingOrder(listings, buyer);
    const sentAt = performance.now();
    try {
      const res = await postSigned(baseUrl, buyer, '/v1/orders', body);
      if (res.status === '2010')
        answered.push({
          orderId: (res.body as { orderId: number }).orderId,
          sentAt,
          answeredAt: performance.now(),
        });
      else failed.push({ sentAt, what: `${res.status} ${JSON.stringify(res.body)}` });
    } catch (err) {
      failed.push({ sentAt, what: err instanceof Error ? err.message : String(err) });
    }
  }

  const every = 1000 / perSecond;
  const sending = (async () => {
    const start = performance.now();
    for (let i = 0; !stopping; i++) {
      const wait = start + i * every - performance.now();
      if (wait > 0) await sleep(wait);
      if (stopping) break;
      const order = send().finally(() => inFlight.delete(order));
      inFlight.add(order);
    }
  })();

  return {
    answered,
    failed,
    async stop() {
      stopping = true;
      await sending;
      await Promise.all(inFlight);
    },
  };
}
