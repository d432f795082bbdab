import SwaggerParser from '@apidevtools/swagger-parser';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let buyer: Credentials;

beforeAll(async () => {
  service = await createTestService({ env: { MARKETPLACE_NAMES: 'alpha,beta,gamma' } });
  buyer = await service.client('document reader');
});
afterAll(() => service.close());

describe('GET /v1/openapi.json', () => {
  it('serves, without signing, a document swagger-parser validates, with the configured domains', async () => {
    const res = await supertest(service.app).get('/v1/openapi.json').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    await expect(SwaggerParser.validate(structuredClone(res.body))).resolves.toMatchObject({
      openapi: '3.1.0',
    });
    expect(res.body.components.schemas.OrderRequest.properties.domain.enum).toEqual([
      'alpha.com',
      'alpha.co.uk',
      'alpha.de',
      'alpha.fr',
      'alpha.it',
      'beta.com',
      'gamma.com',
    ]);
  });

  // signed() checks each answer against the document: these pass only if the document describes them.
  it('describes the answers to a search, a missing order and a method the path lacks', async () => {
    expect((await signed(service.app, buyer, 'GET', '/v1/orders?limit=1')).status).toBe(200);
    expect((await signed(service.app, buyer, 'GET', '/v1/orders/999999')).status).toBe(404);
    const refused = await signed(service.app, buyer, 'DELETE', '/v1/orders');
    expect(refused.status).toBe(405);
    expect(refused.headers.allow).toBe('GET, HEAD, POST');
  });
});
