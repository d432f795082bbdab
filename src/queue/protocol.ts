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
 *
 * Version 2 adds words to one message: an order's end may carry, after its job id and a space, the order's answer
 * as the worker that settled it committed it (the JSON of the OrderResponse a web gives its caller), so the web
 * that waits answers without reading the order again. Every release of version 1 takes the message's first word
 * alone (endedJobOf), so webs of version 1 beside workers of version 2 hear the end as before and read the order;
 * a web of version 2 beside workers of version 1 hears no answer and reads it too. The jobs are unchanged.
 */
export const PROTOCOL = 2;
