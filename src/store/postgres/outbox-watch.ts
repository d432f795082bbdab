import pg from 'pg';
import type { OutboxWatch } from '../store.port.js';
import { OUTBOX_CHANNEL } from './outbox-signal.migration.js';
import { firstHostUrl, targetedClient } from './postgres-hosts.js';

const RECONNECT_MS = 1000;

/**
 * LISTENs for new outbox deliveries on a session of its own at `url` (the server, or a pooler in session mode:
 * never a transaction pooler, which would hand the session's later statements to other connections). A lost
 * connection is opened again a second later; every (re)connect calls `onRecorded` once, for what was signalled
 * while nobody listened.
 */
export function watchOutbox(url: string, onRecorded: () => void, applicationName?: string): OutboxWatch {
  let closed = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  const retry = (lost: pg.Client) => {
    if (closed || lost !== client) return;
    client = undefined;
    lost.end().catch(() => undefined);
    timer = setTimeout(() => void connect(), RECONNECT_MS);
  };
  const connect = async () => {
    const c = new (targetedClient(url, pg.Client))({
      connectionString: firstHostUrl(url),
      ...(applicationName ? { application_name: `${applicationName} listen` } : {}),
    });
    client = c;
    c.on('notification', () => onRecorded());
    c.on('error', () => retry(c));
    c.on('end', () => retry(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
      if (client === c) onRecorded();
    } catch {
      retry(c);
    }
  };
  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await client?.end().catch(() => undefined);
    },
  };
}
