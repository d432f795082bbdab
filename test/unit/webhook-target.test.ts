import { describe, expect, it } from 'vitest';
import { retryDelayMs } from '../../src/services/deliver-webhook.js';
import {
  fixedLookup,
  parseWebhookUrl,
  resolveTarget,
  type ResolvedAddress,
  type Resolver,
} from '../../src/webhooks/webhook-target.js';

const resolvingTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as ResolvedAddress);

describe('webhook URLs', () => {
  it('must be http(s), without credentials; the fragment is dropped and the URL normalised', () => {
    expect(parseWebhookUrl(' https://Hooks.Example.com/in#x ').href).toBe('https://hooks.example.com/in');
    expect(() => parseWebhookUrl('ftp://example.com/')).toThrow('must be https:// or http://');
    expect(() => parseWebhookUrl('javascript:alert(1)')).toThrow('must be https:// or http://');
    expect(() => parseWebhookUrl('https://u:p@example.com/')).toThrow('credentials');
    expect(() => parseWebhookUrl('not a url')).toThrow('is not a URL');
    expect(() => parseWebhookUrl(`https://example.com/${'a'.repeat(2100)}`)).toThrow('longer than');
  });

  it('normalise numeric hosts, so every spelling of loopback is caught', async () => {
    for (const text of ['http://2130706433/', 'http://0x7f.1/', 'http://127.1/']) {
      const host = parseWebhookUrl(text).hostname;
      await expect(resolveTarget(host, { allowPrivate: false, resolve: resolvingTo() })).rejects.toThrow(
        '127.0.0.1 is a loopback address',
      );
    }
  });
});

describe('resolving a webhook target', () => {
  const refuse = { allowPrivate: false };

  it('refuses a name when any address it resolves to is not public', async () => {
    await expect(
      resolveTarget('hooks.example.com', { ...refuse, resolve: resolvingTo('93.184.216.34', '10.0.0.5') }),
    ).rejects.toThrow('hooks.example.com resolves to 10.0.0.5, which is a private address');
    await expect(
      resolveTarget('x.example', { ...refuse, resolve: resolvingTo('::ffff:127.0.0.1') }),
    ).rejects.toThrow('loopback');
    await expect(resolveTarget('x.example', { ...refuse, resolve: resolvingTo() })).rejects.toThrow(
      'resolves to no address',
    );
    const failing: Resolver = () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }));
    await expect(resolveTarget('x.invalid', { ...refuse, resolve: failing })).rejects.toThrow(
      'x.invalid does not resolve (ENOTFOUND)',
    );
  });

  it('gives every address of a public name, and any address when private ones are allowed', async () => {
    const resolve = resolvingTo('93.184.216.34', '2606:2800:220:1::1');
    expect(await resolveTarget('example.com', { ...refuse, resolve })).toHaveLength(2);
    expect(await resolveTarget('127.0.0.1', { allowPrivate: true, resolve })).toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
  });

  it('lets a connection use only the addresses checked', () => {
    const lookup = fixedLookup([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
    const calls: unknown[][] = [];
    const record = (...args: unknown[]) => calls.push(args);
    lookup('evil.example', { family: 6 }, record);
    lookup('evil.example', { all: true }, record);
    lookup('evil.example', {}, record);
    expect(calls[0]).toEqual([null, '2606:2800:220:1::1', 6]);
    expect(calls[1]).toEqual([
      null,
      [expect.objectContaining({ family: 4 }), expect.objectContaining({ family: 6 })],
    ]);
    expect(calls[2]).toEqual([null, '93.184.216.34', 4]);
  });
});

describe('retry waits', () => {
  it('start at the base, double with each failed attempt, and stop growing at one hour', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 1000))).toEqual([1000, 2000, 4000, 8000]);
    expect(retryDelayMs(13, 1000)).toBe(3_600_000);
    expect(retryDelayMs(100, 1000)).toBe(3_600_000);
  });
});
