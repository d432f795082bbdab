/**
 * A client's unsettled orders, counted for its share of the backlog (MAX_UNSETTLED_PER_CLIENT): a partial
 * index on exactly those rows, so a count reads the client's few index entries and no settled order. The same SQL on
 * both stores.
 */
export const UNSETTLED_PER_CLIENT_MIGRATION = {
  name: "unsettled orders per client: a client's share of the backlog",
  sql: `CREATE INDEX orders_unsettled_client ON orders (client_id) WHERE phase <> 'settled';`,
};
