// A balancer in front of several web processes, as an operator runs haproxy or nginx in TCP mode: each new
// connection goes to the next live backend in turn and stays with it (its kept-alive requests included); a backend
// is live while its `GET /readyz` answers 200, checked every second, and is taken out at once when its port refuses
// a connection (which then goes to another one: nothing was sent yet). What a balancer cannot do, and callers then
// see, is what a web does to the connections it already has: the drain of src/processes/web.process.ts is for that.
import http from 'node:http';
import net from 'node:net';
import { apply, join, type Link } from './tcp-proxy.js';
import { sleep } from './wait.js';

export interface Balancer {
  /** The balancer's port on 127.0.0.1. */
  port: number;
  /** The backends' ports that are live now, in the order given. */
  live(): number[];
  /** How many connections the balancer has passed to the backend on `port` since it started. */
  connections(port: number): number;
  /** How many of those are open still: neither side of the link has closed yet. */
  open(port: number): number;
  /**
   * What a caller may feel, with when (ms since the balancer started): a backend going out or back in, a connection
   * closed for want of a live backend, one ended by its backend while a request on it was unanswered.
   */
  events(): string[];
  /** Adds a line of the caller's own to events() (a step of a deploy), to read them in one timeline. */
  mark(what: string): void;
  close(): Promise<void>;
}

export interface BalancerOptions {
  /** How often each backend's /readyz is asked (haproxy's `inter`). */
  checkEveryMs?: number;
  /** How long a new connection waits for a live backend when none is, before it is closed. */
  waitForLiveMs?: number;
}

/** Starts a balancer on a free port of 127.0.0.1 over the web processes listening on `ports` of 127.0.0.1. */
export async function startBalancer(ports: number[], options: BalancerOptions = {}): Promise<Balancer> {
  const { checkEveryMs = 1000, waitForLiveMs = 10_000 } = options;
  const isLive = new Map(ports.map((port) => [port, false]));
  const passed = new Map(ports.map((port) => [port, 0]));
  /** The links open now, each with its backend's port. */
  const links = new Map<Link, number>();
  let turn = 0;
  let closing = false;
  const started = Date.now();
  const events: string[] = [];
  const note = (what: string) => events.push(`${Date.now() - started} ms: ${what}`);

  /** Whether the backend on `port` is ready, and if not, why. */
  const check = (port: number) =>
    new Promise<string | undefined>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false, timeout: checkEveryMs });
      req.once('response', (res) => {
        res.resume();
        resolve(res.statusCode === 200 ? undefined : `/readyz ${res.statusCode}`);
      });
      req.once('timeout', () => req.destroy(new Error(`/readyz unanswered in ${checkEveryMs} ms`)));
      req.once('error', (err) => resolve(err.message));
    });
  const checking = (async () => {
    while (!closing) {
      const found = await Promise.all(ports.map(check));
      ports.forEach((port, i) => {
        const why = found[i];
        if (isLive.get(port) !== (why === undefined))
          note(`:${port} ${why === undefined ? 'live' : `out: ${why}`}`);
        isLive.set(port, why === undefined);
      });
      await sleep(checkEveryMs);
    }
  })();

  /** The next live backend after the last one chosen, or undefined when none is live (or all of `tried` were). */
  const next = (tried: Set<number>) => {
    for (let i = 0; i < ports.length; i += 1) {
      const port = ports[(turn + i) % ports.length]!;
      if (isLive.get(port) && !tried.has(port)) {
        turn = (turn + i + 1) % ports.length;
        return port;
      }
    }
    return undefined;
  };

  /** Connects to a live backend; one that refuses is taken out and the next is tried. */
  const connect = async (): Promise<[number, net.Socket] | undefined> => {
    const tried = new Set<number>();
    for (const deadline = Date.now() + waitForLiveMs; Date.now() < deadline && !closing;) {
      const port = next(tried);
      if (port === undefined) {
        tried.clear();
        await sleep(50);
        continue;
      }
      tried.add(port);
      const upstream = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      const connected = await new Promise<boolean>((resolve) =>
        upstream.once('connect', () => resolve(true)).once('error', () => resolve(false)),
      );
      if (connected) return [port, upstream];
      if (isLive.get(port)) note(`:${port} out: refused a connection`);
      isLive.set(port, false);
    }
    if (!closing) note(`a connection closed: no live backend in ${waitForLiveMs} ms`);
    return undefined;
  };

  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    client.on('error', () => undefined);
    void connect().then((chosen) => {
      if (!chosen || client.destroyed) {
        chosen?.[1].destroy();
        client.destroy();
        return;
      }
      const [port, upstream] = chosen;
      passed.set(port, passed.get(port)! + 1);
      // A request is taken as unanswered from the caller's bytes until the backend's next ones.
      let asked = false;
      const forward = (_link: Link, to: net.Socket, what: Buffer | 'end' | 'destroy') => {
        if (Buffer.isBuffer(what)) asked = to === upstream;
        else if (to === client && asked && !closing) {
          note(`:${port} ${what === 'end' ? 'ended' : 'closed'} a connection with a request unanswered`);
          asked = false;
        }
        apply(to, what);
      };
      links.set(
        join(client, upstream, (link) => links.delete(link), forward),
        port,
      );
      client.resume();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    port,
    live: () => ports.filter((p) => isLive.get(p)),
    connections: (p) => passed.get(p) ?? 0,
    open: (p) => [...links.values()].filter((to) => to === p).length,
    events: () => [...events],
    mark: note,
    async close() {
      closing = true;
      await checking;
      for (const link of [...links.keys()]) {
        link.client.destroy();
        link.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
