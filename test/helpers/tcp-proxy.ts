// A TCP proxy between the service and one of its servers (Redis, PostgreSQL), for the faults a kill does not
// show: a link that freezes without closing (a dead switch, a paused VM), one that is reset, one that is slow.
import net from 'node:net';

export type LinkMode = 'pass' | 'freeze' | { delayMs: number };

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** Bytes pass both ways as they come (the start). */
  pass(): void;
  /** Every connection stays open and no byte passes either way (new ones are accepted and held too). */
  freeze(): void;
  /** Each chunk is held `delayMs` before it is passed on, in order. */
  slow(delayMs: number): void;
  /** Every open connection is closed with a TCP reset on both sides; new ones connect as the mode says. */
  reset(): void;
  /** How many connections are open through the proxy. */
  open(): number;
  close(): Promise<void>;
}

export interface Link {
  client: net.Socket;
  server: net.Socket;
  /** What was held while frozen, in order: chunks for a socket, or the end of one side (its FIN or its close). */
  held: [net.Socket, Buffer | 'end' | 'destroy'][];
}

type Passed = Buffer | 'end' | 'destroy';

/** Does to `to` what came from the other side: a chunk written, its end (FIN) or its close. */
export function apply(to: net.Socket, what: Passed): void {
  if (to.destroyed) return;
  if (what === 'end') to.end();
  else if (what === 'destroy') to.destroy();
  else to.write(what);
}

/**
 * Joins a client's connection to its upstream both ways, chunks, ends and closes each handed to `forward` (by
 * default passed at once); `gone` is called once both are closed.
 */
export function join(
  client: net.Socket,
  upstream: net.Socket,
  gone: (link: Link) => void,
  forward: (link: Link, to: net.Socket, what: Passed) => void = (_link, to, what) => apply(to, what),
): Link {
  const link: Link = { client, server: upstream, held: [] };
  for (const socket of [client, upstream]) socket.setNoDelay(true).on('error', () => undefined);
  client.on('data', (chunk) => forward(link, upstream, chunk));
  upstream.on('data', (chunk) => forward(link, client, chunk));
  client.on('end', () => forward(link, upstream, 'end'));
  upstream.on('end', () => forward(link, client, 'end'));
  client.once('close', () => forward(link, upstream, 'destroy'));
  upstream.once('close', () => forward(link, client, 'destroy'));
  let isGone = false;
  const closed = () => {
    // Each side's close calls this; the first may find the other destroyed already, its close not yet emitted.
    if (isGone || !client.destroyed || !upstream.destroyed) return;
    isGone = true;
    gone(link);
  };
  client.once('close', closed);
  upstream.once('close', closed);
  return link;
}

/** Starts a proxy on a free port of 127.0.0.1 to `target` (`host:port`), passing bytes. */
export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let mode: LinkMode = 'pass';
  const links = new Set<Link>();

  // A frozen link passes nothing, a FIN or a close included: the other side sees the link as it was.
  const forward = (link: Link, to: net.Socket, what: Passed) => {
    if (mode === 'freeze') link.held.push([to, what]);
    else if (mode === 'pass') apply(to, what);
    else setTimeout(() => apply(to, what), mode.delayMs);
  };

  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ port: targetPort, host: targetHost, allowHalfOpen: true });
    links.add(join(client, upstream, (link) => links.delete(link), forward));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    port,
    pass() {
      mode = 'pass';
      for (const link of [...links]) for (const [to, what] of link.held.splice(0)) apply(to, what);
    },
    freeze() {
      mode = 'freeze';
    },
    slow(delayMs) {
      mode = { delayMs };
    },
    reset() {
      for (const link of [...links]) {
        link.client.resetAndDestroy();
        link.server.resetAndDestroy();
      }
    },
    open: () => links.size,
    async close() {
      for (const link of [...links]) {
        link.client.destroy();
        link.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
