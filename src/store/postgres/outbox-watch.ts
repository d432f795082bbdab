import pg from 'pg';
import type { OutboxWatch } from '../port/store.port.js';
import { firstHostUrl, targetedClient } from './postgres-hosts.js';
import { CONNECT_TIMEOUT_MS, KEEPALIVE } from './postgres.pool.js';

/**
 * The channel on which a transaction that recorded webhook deliveries signals the relays at its commit (the
 * triggers of outbox-signal.migration.ts).
 */
export const OUTBOX_CHANNEL = 'bo_outbox';

const RECONNECT_MS = 1000;
/** How often the idle session is asked whether it still answers, and how long it has to. */
const CHECK_EVERY_MS = 10_000;
const CHECK_WITHIN_MS = 5000;

/**
 * LISTENs for new outbox deliveries on a session of its own at `url` (the server, or a pooler in session mode:
 * never a transaction pooler, which would hand the session's later statements to other connections). A lost
 * connection is opened again a second later; every (re)connect calls `onRecorded` once, for what was signalled
 * while nobody listened. A session that only listens sends nothing: it is asked every 10 s whether it still
 * answers, and one that does not within 5 s (a link that froze without closing) is replaced.
 */
export function watchOutbox(url: string, onRecorded: () => void, applicationName?: string): OutboxWatch {
  let closed = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let check: NodeJS.Timeout | undefined;
  const retry = (lost: pg.Client) => {
    if (closed || lost !== client) return;
    client = undefined;
    clearInterval(check);
    // end() waits for the server's goodbye, which a frozen link never brings: the socket is closed at once.
    (lost as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    lost.end().catch(() => undefined);
    timer = setTimeout(() => void connect(), RECONNECT_MS);
  };
  const connect = async () => {
    const c = new (targetedClient(url, pg.Client))({
      connectionString: firstHostUrl(url),
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...KEEPALIVE,
      ...(applicationName ? { application_name: `${applicationName} listen` } : {}),
    });
    client = c;
    c.on('notification', () => onRecorded());
    c.on('error', () => retry(c));
    c.on('end', () => retry(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
      if (client !== c) return;
      onRecorded();
      check = setInterval(() => void answers(c).then((ok) => ok || retry(c)), CHECK_EVERY_MS);
      check.unref();
    } catch {
      retry(c);
    }
  };
  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(check);
      await client?.end().catch(() => undefined);
    },
  };
}

/** Whether `c` answers a trivial statement within CHECK_WITHIN_MS. */
function answers(c: pg.Client): Promise<boolean> {
  return new Promise((resolve) => {
    setTimeout(() => resolve(false), CHECK_WITHIN_MS).unref();
    c.query('SELECT 1').then(
      () => resolve(true),
      () => resolve(false),
    );
  });
}
