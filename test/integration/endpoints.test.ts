// Every endpoint of the one list (ENDPOINTS, src/http/endpoints/index.ts) reaches the three that read it: the
// router answers it with its own handler (neither 4042, no such resource, nor 4050, no such method), the OpenAPI
// document lists its operation and the answer conforms to it, and the request metrics count it under its route.
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src/http/app.js';
import { openApiPath } from '../../src/http/endpoints/endpoint.js';
import { ENDPOINTS } from '../../src/http/endpoints/index.js';
import { REQUEST_LABELS } from '../../src/http/request-labels.js';
import { createProcessMetrics, type ProcessMetrics } from '../../src/metrics/http.metrics.js';
import { conformsToDocument } from '../helpers/openapi-validator.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let buyer: Credentials;
let metrics: ProcessMetrics;
let app: App;
let document: { paths: Record<string, Record<string, { operationId: string }>> };

beforeAll(async () => {
  service = await createTestService();
  buyer = await service.client('endpoint tester');
  metrics = createProcessMetrics(REQUEST_LABELS);
  app = createApp(service.deps, { observe: metrics.observe });
  document = (await supertest(app).get('/v1/openapi.json').expect(200)).body as typeof document;
});
afterAll(() => service.close());

/** The endpoint's path as a client sends it, each :parameter given a value. */
const sentPath = (path: string) => `/v1${path.replace(/:\w+/g, '1')}`;

/** The series of http_requests_total counted so far, by their labels. */
async function counted(): Promise<Partial<Record<string, string | number>>[]> {
  const metric = metrics.registry.getSingleMetric('http_requests_total')!;
  return (await metric.get()).values.map((v) => v.labels);
}

describe('the endpoint list', () => {
  it('names each method and path once, and the document lists exactly its operations', () => {
    const keys = ENDPOINTS.map((e) => `${e.method} ${e.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    const listed = Object.values(document.paths).flatMap((item) => Object.values(item));
    expect(listed.map((op) => op.operationId).sort()).toEqual(
      ENDPOINTS.map((e) => e.operation.operationId).sort(),
    );
  });

  it('when a path is in no endpoint, then 4042 and the metrics count it as unmatched', async () => {
    const res = await signed(app, buyer, 'GET', '/v1/no-such-endpoint');
    expect(res.headers['svc-status']).toBe('4042');
    await vi.waitFor(async () =>
      expect(await counted()).toContainEqual(expect.objectContaining({ route: 'unmatched' })),
    );
  });

  describe.each(ENDPOINTS.map((e) => [`${e.method} ${e.path}`, e] as const))('%s', (_, endpoint) => {
    it('is answered by its route, as its operation in the document says, and counted under its route', async () => {
      const path = sentPath(endpoint.path);
      // A POST with an empty object: its own handler refuses it (4220), not the router.
      const res = await signed(
        app,
        buyer,
        endpoint.method,
        path,
        endpoint.method === 'POST' ? {} : undefined,
      );
      expect(String(res.headers['svc-status'])).not.toMatch(/4042|4050/);
      expect(document.paths[openApiPath(endpoint.path)]?.[endpoint.method.toLowerCase()]?.operationId).toBe(
        endpoint.operation.operationId,
      );
      conformsToDocument(endpoint.method, path)(res);
      // Counted once the response is sent ('finish'), which may come just after the client has it.
      await vi.waitFor(async () =>
        expect(await counted()).toContainEqual(
          expect.objectContaining({ method: endpoint.method, route: `/v1${endpoint.path}` }),
        ),
      );
    });
  });
});
