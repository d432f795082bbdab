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

/** IPv6 forms that carry an IPv4 address (at a byte offset): they are judged by that address. */
const EMBEDDING_V4 = [
  ['::ffff:0:0', 96, 12], // IPv4-mapped
  ['::ffff:0:0:0', 96, 12], // IPv4-translated (SIIT)
  ['::', 96, 12], // IPv4-compatible (deprecated)
  ['64:ff9b::', 96, 12], // NAT64
  ['2002::', 16, 2], // 6to4
].map(([first, bits, offset]) => [parseIp(first as string)!, bits as number, offset as number] as const);

/**
 * Why `address` may not be a webhook's target: the name of its range (loopback, private, link-local,
 * unspecified, shared, multicast, reserved…), or null for a public unicast address. An IPv6 address that
 * carries an IPv4 one (mapped, translated, NAT64, 6to4) is judged by the IPv4 address; anything that is not an IP
 * address is refused.
 */
export function forbiddenRange(address: string): string | null {
  const bytes = parseIp(address);
  if (!bytes) return 'not an IP address';
  if (bytes.length === 4) return rangeOf(bytes, V4_RANGES);
  const own = rangeOf(bytes, V6_RANGES);
  if (own) return own;
  for (const [first, bits, offset] of EMBEDDING_V4) {
    if (inPrefix(bytes, first, bits)) {
      const range = rangeOf(bytes.subarray(offset, offset + 4), V4_RANGES);
      return range && `${range} (IPv4 ${bytes.subarray(offset, offset + 4).join('.')} inside IPv6)`;
    }
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
