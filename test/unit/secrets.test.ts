import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { parseSecretsKey } from '../../src/config/secrets-key-format.js';
import { createSealer, SealedValueError, tokenHasher } from '../../src/domain/secrets.js';

const KEY = crypto.randomBytes(32);
const PG = 'postgres://u@db.internal:5432/orders';

describe('SECRETS_KEY', () => {
  it('is 32 bytes given as 64 hex characters or as base64, with or without padding', () => {
    expect(parseSecretsKey(KEY.toString('hex'))).toEqual(KEY);
    expect(parseSecretsKey(KEY.toString('hex').toUpperCase())).toEqual(KEY);
    expect(parseSecretsKey(KEY.toString('base64'))).toEqual(KEY);
    expect(parseSecretsKey(`${KEY.toString('base64').replace(/=$/, '')}\n`)).toEqual(KEY);
  });

  it.each([
    '',
    'abc',
    'x'.repeat(64),
    crypto.randomBytes(16).toString('hex'),
    crypto.randomBytes(33).toString('base64'),
  ])('refuses %j at start, naming the variable and not echoing the value', (value) => {
    const attempt = () => loadConfig({ SECRETS_KEY: value || ' ' });
    expect(attempt).toThrow(/SECRETS_KEY: must be 32 bytes as 64 hex characters or base64/);
    if (value.length > 3) expect(attempt).not.toThrow(value);
  });

  it('is required with DATABASE_URL, where every host must seal with the same key', () => {
    expect(() => loadConfig({ DATABASE_URL: PG })).toThrow(/SECRETS_KEY: required with DATABASE_URL/);
    expect(loadConfig({ DATABASE_URL: PG, SECRETS_KEY: KEY.toString('hex') }).SECRETS_KEY).toBe(
      KEY.toString('hex'),
    );
    expect(loadConfig({}).SECRETS_KEY).toBeUndefined();
  });
});

describe('a sealed secret key', () => {
  const sealer = createSealer(KEY);

  it('is v1: and base64 of nonce, ciphertext and tag, different each time, and opens to the same value', () => {
    const secret = `sk_${crypto.randomBytes(32).toString('hex')}`;
    const [a, b] = [sealer.seal(secret, 'AK1'), sealer.seal(secret, 'AK1')];
    expect(a).toMatch(/^v1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice(3, 20));
    expect(Buffer.from(a.slice(3), 'base64')).toHaveLength(12 + Buffer.byteLength(secret) + 16);
    expect(sealer.unseal(a, 'AK1')).toBe(secret);
    expect(sealer.unseal(b, 'AK1')).toBe(secret);
  });

  it('does not open under another key, for another access key, or altered', () => {
    const sealed = sealer.seal('sk_x', 'AK1');
    expect(() => createSealer(crypto.randomBytes(32)).unseal(sealed, 'AK1')).toThrow(SealedValueError);
    expect(() => sealer.unseal(sealed, 'AK2')).toThrow(SealedValueError);
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[14] = (raw[14] ?? 0) ^ 1;
    expect(() => sealer.unseal(`v1:${raw.toString('base64')}`, 'AK1')).toThrow(SealedValueError);
    expect(() => sealer.unseal('sk_x', 'AK1')).toThrow(SealedValueError);
  });

  it('names its key by an id that is stable and is not the key', () => {
    expect(createSealer(KEY).keyId).toBe(sealer.keyId);
    expect(sealer.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(KEY.toString('hex')).not.toContain(sealer.keyId);
    expect(createSealer(crypto.randomBytes(32)).keyId).not.toBe(sealer.keyId);
  });
});

describe('a sealer during a rotation (SECRETS_KEY_PREVIOUS)', () => {
  const NEXT = crypto.randomBytes(32);
  const old = createSealer(KEY);
  const rotating = createSealer(NEXT, KEY);

  it('opens what either key sealed, and seals under SECRETS_KEY only', () => {
    const before = old.seal('sk_before', 'AK1');
    const after = rotating.seal('sk_after', 'AK1');
    expect(rotating.unseal(before, 'AK1')).toBe('sk_before');
    expect(rotating.unseal(after, 'AK1')).toBe('sk_after');
    expect(() => old.unseal(after, 'AK1')).toThrow(SealedValueError);
    expect(createSealer(NEXT).unseal(after, 'AK1')).toBe('sk_after');
    expect(() => rotating.unseal(before, 'AK2')).toThrow(SealedValueError);
  });

  it('tells what SECRETS_KEY itself seals from what only the previous key opens', () => {
    expect(rotating.sealedUnderCurrent(rotating.seal('sk', 'AK1'), 'AK1')).toBe(true);
    expect(rotating.sealedUnderCurrent(old.seal('sk', 'AK1'), 'AK1')).toBe(false);
  });

  it('is named by SECRETS_KEY and opens a store sealed under either key', () => {
    expect(rotating.keyId).toBe(createSealer(NEXT).keyId);
    expect(rotating.opens(old.keyId)).toBe(true);
    expect(rotating.opens(rotating.keyId)).toBe(true);
    expect(rotating.opens(createSealer(crypto.randomBytes(32)).keyId)).toBe(false);
    expect(rotating.opens(undefined)).toBe(false);
    expect(old.opens(rotating.keyId)).toBe(false);
  });

  it('is read from SECRETS_KEY_PREVIOUS, which must be a key too', () => {
    const env = { SECRETS_KEY: NEXT.toString('hex'), SECRETS_KEY_PREVIOUS: 'short' };
    expect(() => loadConfig(env)).toThrow(/SECRETS_KEY_PREVIOUS: must be 32 bytes/);
    expect(loadConfig({ ...env, SECRETS_KEY_PREVIOUS: KEY.toString('hex') }).SECRETS_KEY_PREVIOUS).toBe(
      KEY.toString('hex'),
    );
  });
});

describe('a card token hash', () => {
  it('is a keyed HMAC: the same under one key, another under another key', () => {
    const [k1, k2] = [crypto.randomBytes(32), crypto.randomBytes(32)];
    expect(tokenHasher(k1)('cc_1')).toBe(tokenHasher(k1)('cc_1'));
    expect(tokenHasher(k1)('cc_1')).toMatch(/^[0-9a-f]{64}$/);
    expect(tokenHasher(k1)('cc_1')).not.toBe(tokenHasher(k2)('cc_1'));
    expect(tokenHasher(k1)('cc_1')).not.toBe(crypto.createHash('sha256').update('cc_1').digest('hex'));
  });
});
