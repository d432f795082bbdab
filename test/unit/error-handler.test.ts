import express from 'express';
import supertest from 'supertest';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { errorHandler } from '../../src/http/errors.js';
import { SecretsKeyMismatchError } from '../../src/store/secrets/store-secrets.js';

describe('when a process on a rotated-away SECRETS_KEY meets the store', () => {
  it('then the request is answered 503 with 5030 and Retry-After, not 5000', async () => {
    const app = express();
    const log = pino({ level: 'silent' });
    app.use((req, _res, next) => {
      Object.assign(req, { log });
      next();
    });
    app.get('/x', () => {
      throw new SecretsKeyMismatchError('aaaa', 'bbbb');
    });
    app.use(errorHandler);
    const res = await supertest(app).get('/x');
    expect(res.status).toBe(503);
    expect(res.headers['svc-status']).toBe('5030');
    expect(res.headers['retry-after']).toBe('1');
  });
});
