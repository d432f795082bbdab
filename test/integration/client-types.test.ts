// The client package's types (client/src/api-types.ts, committed) are what openapi-typescript makes of the
// document the service serves: a schema changed without `npx tsx scripts/client-types.ts` fails here.
import fs from 'node:fs';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, clientTypesSource } from '../../scripts/client-types.js';
import { createTestService, type TestService } from '../helpers/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await createTestService();
});
afterAll(() => service.close());

describe('client/src/api-types.ts', () => {
  it('is generated from the OpenAPI document the service serves (regenerate: npx tsx scripts/client-types.ts)', async () => {
    const served = (await supertest(service.app).get('/v1/openapi.json').expect(200)).body as object;
    expect(fs.readFileSync(CLIENT_TYPES_FILE, 'utf8')).toBe(await clientTypesSource(served));
  });
});
