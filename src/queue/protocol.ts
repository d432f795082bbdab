/**
 * The version of what processes say to each other through Redis: the jobs of the orders and webhooks queues and
 * the messages published (an order's end on `<prefix>:orders:ended`, the clock's store counts, the heartbeats).
 *
 * Version 1 is what every release so far writes: `process-order` {orderId}, `deliver-webhook` {deliveryId, attempt,
 * webhookId?}, an order's end as its job id `order-<id>`. Releases before this one validate a job's payload
 * strictly (an unknown field fails the job as a bad payload), so this release writes version 1 exactly, without a
 * version field, and reads version 1 with or without one (`v`), ignoring fields it does not know. A later release
 * may add fields, with `v` set to its version, once no process of a release before this one can run: every
 * heartbeat then carries a protocol (process-heartbeat.ts), and one without it is from a release that would fail
 * those jobs. Fields are added, never renamed or removed.
 */
export const PROTOCOL = 1;
