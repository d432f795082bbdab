import { describe, expect, it } from 'vitest';
import { forbiddenRange, parseIp } from '../../src/domain/ip-ranges.js';

describe('forbiddenRange: which addresses a webhook may not reach', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['224.0.0.251', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private (unique local)'],
    ['fd12:3456::1', 'private (unique local)'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['[::1]', 'loopback'],
    ['ff02::1', 'multicast'],
    ['192.0.0.8', 'IETF protocol assignment'],
    ['192.0.0.255', 'IETF protocol assignment'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['64:ff9b:1::1', 'private (local NAT64)'],
    ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'private (local NAT64)'],
    ['fec0::1', 'site-local'],
    ['feff:ffff::1', 'site-local'],
  ])('refuses %s as %s', (address, range) => {
    expect(forbiddenRange(address)).toBe(range);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:c0a8:0101::1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:a00:1', 'private'],
    // Teredo (2001::/32): its server's address, or its client's, inverted, in the last 32 bits.
    ['2001:0:7f00:1::', 'loopback'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'],
    ['2001:0:808:808::80ff:fffe', 'loopback'],
    ['2001:0:4136:e378::f5ff:fffe', 'private'],
    ['2001:0:a9fe:a9fe::', 'link-local'],
    // ISATAP: the interface identifier 0000:5efe or 0200:5efe, then the IPv4 address, under any prefix.
    ['2606:4700::5efe:7f00:1', 'loopback'],
    ['2606:4700::200:5efe:a9fe:a9fe', 'link-local'],
    ['2606:4700::200:5efe:c0a8:101', 'private'],
  ])('judges an IPv6 address carrying IPv4 (%s) by that address', (address, range) => {
    expect(forbiddenRange(address)).toMatch(new RegExp(`^${range.replace(/[()]/g, '\\$&')} \\(IPv4 `));
  });

  it.each([
    '8.8.8.8',
    '93.184.216.34',
    '100.128.0.1',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '::ffff:0:8.8.8.8',
    // just outside a blocked range
    '192.0.1.1',
    '198.17.255.255',
    '198.20.0.1',
    '64:ff9b:2::1',
    // Teredo with a public server and client (8.8.8.8 inverted is f7f7:f7f7), ISATAP of a public address.
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
    '2606:4700::5efe:808:808',
    // Neither Teredo (2001:0::/32) nor ISATAP (0000:5efe): last 32 bits that would read as loopback.
    '2001:1::ffff:fffe',
    '2606:4700::5eff:7f00:1',
  ])('allows the public address %s', (address) => {
    expect(forbiddenRange(address)).toBeNull();
  });

  it('names the IPv4 address it found inside an IPv6 one, a zone left out', () => {
    expect(forbiddenRange('::ffff:127.0.0.1')).toBe('loopback (IPv4 127.0.0.1 inside IPv6)');
    expect(forbiddenRange('::ffff:127.0.0.1%eth0')).toBe('loopback (IPv4 127.0.0.1 inside IPv6)');
    expect(forbiddenRange('2002:c0a8:0101::1')).toBe('private (IPv4 192.168.1.1 inside IPv6)');
    expect(forbiddenRange('2001:0:4136:e378:8000:63bf:80ff:fffe')).toBe(
      'loopback (IPv4 127.0.0.1 inside IPv6)',
    );
  });

  it('refuses what is not an address', () => {
    expect(forbiddenRange('example.com')).toBe('not an IP address');
    expect(forbiddenRange('1[::1]')).toBe('not an IP address');
    expect(forbiddenRange('[::1]1')).toBe('not an IP address');
    expect(forbiddenRange('')).toBe('not an IP address');
  });

  it('parses IPv4 and IPv6 forms to bytes', () => {
    expect([...parseIp('1.2.3.4')!]).toEqual([1, 2, 3, 4]);
    expect([...parseIp('1:2:3:4:5:6:7:8')!]).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect([...parseIp('::ffff:1.2.3.4')!]).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 1, 2, 3, 4]);
    expect([...parseIp('1::')!]).toEqual([0, 1, ...Array<number>(14).fill(0)]);
    expect(parseIp('1.2.3')).toBeNull();
  });
});
