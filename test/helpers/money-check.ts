// The money check that ends every test service (docs/api.md#item-statuses-and-moves): for every settled order, what the
// gateway holds = what the ledger says = the shares of the items still bought. An order whose payment the
// gateway has not caught up with yet is first brought there, as reconciliation would: what is checked is that
// it converges, not that the test happened to wait for it.
import type { Deps } from '../../src/deps.js';
import { syncPayment } from '../../src/services/payment-sync.js';
import { LEDGER_SUM } from '../../src/store/shared/payment-target.sql.js';
import type { Probe } from './store.probe.js';

interface OrderMoney {
  orderId: number;
  pending: number;
  ledger: number;
  bought: number;
  gateway: number;
}

const MONEY_SQL = `
  SELECT o.order_id AS "orderId",
         CASE WHEN o.payment_applied_version < o.payment_version THEN 1 ELSE 0 END AS "pending",
         (SELECT ${LEDGER_SUM} FROM ledger_entries l WHERE l.order_id = o.order_id) AS "ledger",
         (SELECT CAST(coalesce(sum(i.cost_cents + i.shipcost_cents + i.tax_cents), 0) AS BIGINT)
            FROM order_items i WHERE i.order_id = o.order_id AND i.status IN (5, 93, 4, 35)) AS "bought",
         CAST(coalesce((SELECT CASE WHEN p.status = 'authorized' THEN p.amount_cents ELSE 0 END
                          FROM payments p WHERE p.idempotency_key = 'order-' || o.order_id), 0) AS BIGINT)
           AS "gateway"
    FROM orders o
   WHERE o.phase = 'settled'`;

const read = (probe: Probe) =>
  probe.all<OrderMoney>(MONEY_SQL).then((rows) =>
    rows.map((r) => ({
      orderId: Number(r.orderId),
      pending: Number(r.pending),
      ledger: Number(r.ledger),
      bought: Number(r.bought),
      gateway: Number(r.gateway),
    })),
  );

/** Throws naming every settled order whose gateway, ledger and bought shares disagree. */
export async function checkMoney(probe: Probe, deps: Pick<Deps, 'store' | 'payments' | 'logger'>) {
  for (const order of await read(probe)) {
    if (order.pending) await syncPayment(deps, order.orderId);
  }
  const wrong = (await read(probe)).filter((o) => o.ledger !== o.bought || o.gateway !== o.bought);
  if (wrong.length > 0) {
    const lines = wrong.map(
      (o) => `order ${o.orderId}: gateway ${o.gateway}, ledger ${o.ledger}, bought ${o.bought}`,
    );
    throw new Error(`money check: gateway = ledger = bought fails for\n${lines.join('\n')}`);
  }
}
