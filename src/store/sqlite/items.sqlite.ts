import type {
  ItemMoveWrite,
  ItemMoveWriteResult,
  ItemStore,
  StoredItemWithCurrency,
} from '../port/store.port.js';
import { itemFields } from '../shared/item.columns.js';
import { ledgerWriter, paymentVersionBumper } from './ledger.sqlite.js';
import type { Db } from './sqlite.db.js';
import { eventRecorder } from './webhooks.sqlite.js';

/** Item moves as compare-and-set: status, stock, shipping cost and ledger change together or not at all. */
export function sqliteItems(db: Db): ItemStore {
  const itemById = db.prepare<[number], StoredItemWithCurrency>(
    `SELECT ${itemFields('i')}, o.currency FROM order_items i JOIN orders o ON o.order_id = i.order_id
      WHERE i.order_item_id = ?`,
  );
  const updateItem = db.prepare(
    `UPDATE order_items
        SET status = @to, updated_at = @now, status_changed_at = @now,
            shipcost_cents = shipcost_cents + @addShipcostCents,
            extra_shipping_cents = coalesce(@extraShippingCents, extra_shipping_cents),
            shipping_company = coalesce(@shippingCompany, shipping_company),
            tracking_id = coalesce(@trackingId, tracking_id)
      WHERE order_item_id = @orderItemId AND status = @from AND status_changed_at = @fromChangedAt`,
  );
  // A move with an event writes its order once, before the item: the event's sequence and the items' time (the
  // move's, so the trigger of order_items, items-updated.migration.ts, finds nothing more to write). Nothing when
  // the item is no longer as read.
  const countEvent = db
    .prepare<ItemMoveWrite, number>(
      `UPDATE orders SET event_seq = event_seq + 1,
              items_updated_at = CASE WHEN coalesce(items_updated_at, created_at) < @now THEN @now
                                      ELSE items_updated_at END
        WHERE order_id = (SELECT order_id FROM order_items
                           WHERE order_item_id = @orderItemId AND status = @from AND status_changed_at = @fromChangedAt)
       RETURNING event_seq`,
    )
    .pluck();
  const returnStock = db.prepare('UPDATE listings SET stock = stock + 1 WHERE listing_id = ?');
  const writeLedger = ledgerWriter(db);
  const recordEvent = eventRecorder(db);
  const bumpPaymentVersion = paymentVersionBumper(db);

  const applyMove = db.transaction((m: ItemMoveWrite): ItemMoveWriteResult => {
    const sequence = m.event ? countEvent.get(m) : undefined;
    if (m.event && sequence === undefined) return { kind: 'changed' };
    if (updateItem.run(m).changes !== 1) return { kind: 'changed' };
    if (m.returnStockOf !== null) returnStock.run(m.returnStockOf);
    const entryId = m.ledger ? writeLedger(m.ledger, m.now) : null;
    if (m.ledger && entryId !== null) bumpPaymentVersion(m.ledger.orderId);
    const item = itemById.get(m.orderItemId)!;
    if (m.event) recordEvent(item.orderId, m.event, m.now, sequence);
    return { kind: 'moved', item, entryId };
  });

  return {
    async getItem(orderItemId) {
      return itemById.get(orderItemId) ?? null;
    },
    async applyMove(move) {
      return applyMove.immediate(move);
    },
  };
}
