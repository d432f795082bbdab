import dns from 'node:dns';
import net from 'node:net';
import { forbiddenRange } from '../domain/ip-ranges.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address a name resolves to; the system resolver unless a test hands in its own. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface DnsOptions {
  /** The first try's time-out of one query (c-ares doubles it for each try after). */
  timeoutMs?: number;
  tries?: number;
  /** DNS servers to ask instead of the system's (`host:port`): tests. */
  servers?: string[];
}

/**
 * Every address a name resolves to, asked of the DNS servers by c-ares (`dns.Resolver`: on the event loop, a
 * time-out per query) rather than by getaddrinfo (`dns.lookup`), which waits without a bound on one of libuv's four
 * threads: one endpoint's slow resolver would then hold every client's deliveries (and the file reads sharing
 * those threads). /etc/hosts is not read; `localhost` and `*.localhost` are the loopback addresses (RFC 6761).
 */
export function dnsResolver({ timeoutMs = 1000, tries = 2, servers }: DnsOptions = {}): Resolver {
  const resolver = new dns.promises.Resolver({ timeout: timeoutMs, tries });
  if (servers) resolver.setServers(servers);
  return async (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost'))
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    const found: ResolvedAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
    ];
    if (found.length > 0) return found;
    // Both failed, or neither has an address: the IPv4 query's error says most (ENOTFOUND, ETIMEOUT…).
    if (v4.status === 'rejected') throw v4.reason;
    if (v6.status === 'rejected') throw v6.reason;
    return [];
  };
}

export const systemResolver: Resolver = dnsResolver();

/** A webhook URL that is refused: its message says why, for the operator or the delivery's last error. */
export class WebhookTargetError extends Error {}

const URL_MAX = 2048;

/** A webhook URL as it is stored and called: http or https, a host, no credentials, no fragment. */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new WebhookTargetError(`'${text}' is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new WebhookTargetError(`the URL must be https:// or http://, not ${url.protocol}//`);
  // Webhook URLs are printed by webhook:list and logged: a password has no place in them.
  if (url.username || url.password) throw new WebhookTargetError('the URL must not carry credentials');
  if (url.href.length > URL_MAX) throw new WebhookTargetError(`the URL is longer than ${URL_MAX} characters`);
  url.hash = '';
  return url;
}

/** The host of a URL as a resolver or a socket takes it: an IPv6 address without its brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Resolves the host once and checks every address it gives: unless `allowPrivate`, a loopback, private,
 * link-local, unspecified (or otherwise non-public) address refuses the whole target, since a connection
 * might pick any of them. Throws a WebhookTargetError saying which address and why.
 */
export async function resolveTarget(
  host: string,
  { allowPrivate, resolve }: { allowPrivate: boolean; resolve: Resolver },
): Promise<ResolvedAddress[]> {
  const family = net.isIP(host);
  let addresses: ResolvedAddress[];
  if (family !== 0) addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch (err) {
      throw new WebhookTargetError(
        `${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? err})`,
      );
    }
    if (addresses.length === 0) throw new WebhookTargetError(`${host} resolves to no address`);
  }
  if (allowPrivate) return addresses;
  for (const { address } of addresses) {
    const range = forbiddenRange(address);
    if (range === null) continue;
    const what = address === host ? address : `${host} resolves to ${address}, which`;
    throw new WebhookTargetError(`${what} is a ${range} address (WEBHOOK_ALLOW_PRIVATE is off)`);
  }
  return addresses;
}

/**
 * A `lookup` for node:net that answers with addresses already resolved and checked, so the connection goes
 * to one of them and the name is never resolved a second time (no window for DNS rebinding).
 */
export function fixedLookup(addresses: readonly ResolvedAddress[]): net.LookupFunction {
  return (_hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
    const usable = addresses.filter((a) => wanted === 0 || a.family === wanted);
    const first = usable[0];
    if (!first) {
      const err: NodeJS.ErrnoException = new Error(`no IPv${wanted} address among the checked ones`);
      err.code = 'ENOTFOUND';
      callback(err, '', 0);
    } else if (options.all) {
      (callback as unknown as (e: null, all: ResolvedAddress[]) => void)(null, usable);
    } else callback(null, first.address, first.family);
  };
}
