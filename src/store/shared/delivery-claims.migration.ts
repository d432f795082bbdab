/**
 * Claims of delivery attempts, the same SQL on both stores: the attempt a worker is making now, and until when
 * it may still start its request. webhook:remove waits for the claims on its webhook to end, so that nothing is
 * posted to a webhook after the remove answered.
 */
export const DELIVERY_CLAIMS_MIGRATION_SQL = `
  ALTER TABLE webhook_deliveries ADD COLUMN claimed_until BIGINT;
  CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (webhook_id) WHERE claimed_until IS NOT NULL;
`;
export const DELIVERY_CLAIMS_MIGRATION_NAME = 'delivery claims: a webhook checked at delivery time';
