import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';

/** A logger at info writing into an array: each line parsed. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ LOG_LEVEL: 'info', LOG_PRETTY: 'false' }, 'test', {
    write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { logger, lines };
}

describe('the logger', () => {
  it('never writes a secret key, card token or signature, at any depth, in a line or a binding', () => {
    const { logger, lines } = capture();
    const child = logger.child({ requestId: 'r-1', secretKey: 'sk-binding' });
    child.info(
      {
        secretKey: 'sk-top',
        order: { ccToken: 'tok-1', listings: [{ ccToken: 'tok-2' }] },
        req: { headers: { 'svc-signature': 'sig-1', 'svc-requestid': 'r-1' } },
      },
      'placed',
    );
    const text = JSON.stringify(lines);
    for (const secret of ['sk-binding', 'sk-top', 'tok-1', 'tok-2', 'sig-1'])
      expect(text).not.toContain(secret);
    expect(lines[0]).toMatchObject({
      requestId: 'r-1',
      secretKey: '[redacted]',
      msg: 'placed',
      order: { ccToken: '[redacted]', listings: [{ ccToken: '[redacted]' }] },
      req: { headers: { 'svc-signature': '[redacted]', 'svc-requestid': 'r-1' } },
    });
  });

  it('keeps the other fields of a line as they were logged', () => {
    const { logger, lines } = capture();
    logger.info({ orderId: 7, clientId: 3, ms: 1.5, ok: true, path: '/v1/orders' }, 'order answered');
    expect(lines[0]).toMatchObject({
      name: 'test',
      orderId: 7,
      clientId: 3,
      ms: 1.5,
      ok: true,
      path: '/v1/orders',
      msg: 'order answered',
    });
    expect(lines[0]).toHaveProperty('pid', process.pid);
  });
});
