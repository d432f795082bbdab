import net from 'node:net';

/** An address range: its first address, its prefix length, and what it is. */
type Range = readonly [first: Uint8Array, bits: number, name: string];

const ranges = (list: [string, number, string][]): readonly Range[] =>
  list.map(([first, bits, name]) => [parseIp(first)!, bits, name]);

const V4_RANGES = ranges([
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignment'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
]);

const V6_RANGES = ranges([
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'private (local NAT64)'],
  ['fc00::', 7, 'private (unique local)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
]);

/** The IPv4 address at `offset` of an IPv6 address's bytes, each byte XORed with `xor`. */
const v4At =
  (offset: number, xor = 0) =>
  (bytes: Uint8Array): Uint8Array =>
    bytes.subarray(offset, offset + 4).map((byte) => byte ^ xor);

/**
 * IPv6 forms that carry IPv4 addresses, each with where they are: such an address is judged by every IPv4 address
 * it carries, since traffic to it may reach any of them. Teredo carries its server's, and its client's inverted
 * (RFC 4380: the client is where the relay sends the packets); ISATAP carries one in its interface identifier,
 * under any prefix (RFC 5214), which `first` and `bits` then match instead of the prefix.
 */
const EMBEDDING_V4 = (
  [
    ['::ffff:0:0', 96, [v4At(12)]], // IPv4-mapped
    ['::ffff:0:0:0', 96, [v4At(12)]], // IPv4-translated (SIIT)
    ['::', 96, [v4At(12)]], // IPv4-compatible (deprecated)
    ['64:ff9b::', 96, [v4At(12)]], // NAT64
    ['2002::', 16, [v4At(2)]], // 6to4
    ['2001::', 32, [v4At(4), v4At(12, 0xff)]], // Teredo: server, then client
  ] as const
).map(([first, bits, carried]) => ({ first: parseIp(first)!, bits, carried }));

/** ISATAP's interface identifiers (RFC 5214): 0000:5efe or, universal, 0200:5efe, then the IPv4 address. */
const ISATAP_IDS = ['::5efe:0:0', '::200:5efe:0:0'].map((id) => parseIp(id)!.subarray(8, 12));

const isIsatap = (bytes: Uint8Array): boolean =>
  ISATAP_IDS.some((id) => id.every((byte, i) => bytes[8 + i] === byte));

/** The IPv4 addresses an IPv6 address carries (EMBEDDING_V4, ISATAP), none for any other. */
function carriedV4(bytes: Uint8Array): Uint8Array[] {
  for (const { first, bits, carried } of EMBEDDING_V4)
    if (inPrefix(bytes, first, bits)) return carried.map((at) => at(bytes));
  return isIsatap(bytes) ? [v4At(12)(bytes)] : [];
}

/**
 * Why `address` may not be a webhook's target: the name of its range (loopback, private, link-local,
 * unspecified, shared, multicast, reserved…), or null for a public unicast address. An IPv6 address that
 * carries IPv4 ones (mapped, translated, compatible, NAT64, 6to4, Teredo, ISATAP) is judged by each of them;
 * anything that is not an IP address is refused.
 */
export function forbiddenRange(address: string): string | null {
  const bytes = parseIp(address);
  if (!bytes) return 'not an IP address';
  if (bytes.length === 4) return rangeOf(bytes, V4_RANGES);
  const own = rangeOf(bytes, V6_RANGES);
  if (own) return own;
  for (const v4 of carriedV4(bytes)) {
    const range = rangeOf(v4, V4_RANGES);
    if (range) return `${range} (IPv4 ${v4.join('.')} inside IPv6)`;
  }
  return null;
}

function rangeOf(bytes: Uint8Array, ranges: readonly Range[]): string | null {
  for (const [first, bits, name] of ranges) if (inPrefix(bytes, first, bits)) return name;
  return null;
}

function inPrefix(bytes: Uint8Array, first: Uint8Array, bits: number): boolean {
  // A guard: every caller compares addresses of one family.
  // Stryker disable next-line ConditionalExpression,BooleanLiteral: see above
  if (bytes.length !== first.length) return false;
  // Stryker disable next-line EqualityOperator: one more step at bit = bits has mask 0
  for (let bit = 0; bit < bits; bit += 8) {
    // Stryker disable next-line EqualityOperator: with 8 bits left the shift is 0, mask 0xff either way
    const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff;
    if (((bytes[bit / 8]! ^ first[bit / 8]!) & mask) !== 0) return false;
  }
  return true;
}

/** The 4 or 16 bytes of an IPv4 or IPv6 address (a zone such as `%eth0` and brackets ignored), else null. */
export function parseIp(text: string): Uint8Array | null {
  const address = text
    .replace(/^\[(.*)\]$/, '$1')
    // Stryker disable next-line Regex: without `$`, `.*` still stops at a line break, which no address holds
    .replace(/%.*$/, '');
  const family = net.isIP(address);
  if (family === 4) return Uint8Array.from(address.split('.').map(Number));
  if (family !== 6) return null;
  // Stryker disable next-line StringLiteral: split always gives a first element
  const [head = '', tail] = address.split('::');
  const groups = (part: string): number[] =>
    // Stryker disable next-line ConditionalExpression,StringLiteral: '' reads as one NaN group, 0 in bytes, in place of one zero of the fill
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return Uint8Array.from(all.flatMap((group) => [group >> 8, group & 0xff]));
}
