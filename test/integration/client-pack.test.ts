// The client package as a caller gets it: `npm pack` of client/, the tarball installed into an empty folder with
// nothing else of this repository, an order placed from there by plain `node`, and its types checked there.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, type TestService } from '../helpers/test-service.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

let service: TestService;
let server: http.Server;
let baseUrl: string;
let work: string;
let app: string;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  server = http.createServer(service.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'client-pack-'));
  app = path.join(work, 'app');
  fs.mkdirSync(app);
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await service?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/**
 * `npm pack` of the package (its prepack script compiles it with the repository's TypeScript). It runs in a
 * copy of client/ whose node_modules is the repository's, so that two test projects packing at once do not
 * write the same client/dist.
 */
async function pack(): Promise<string> {
  const copy = path.join(work, 'client');
  fs.mkdirSync(copy);
  for (const entry of ['package.json', 'tsconfig.json', 'src'])
    fs.cpSync(path.join(ROOT, 'client', entry), path.join(copy, entry), { recursive: true });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: copy });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  expect(packed!.files.map((f) => f.path)).toContain('dist/index.d.ts');
  expect(packed!.files.every((f) => f.path === 'package.json' || f.path.startsWith('dist/'))).toBe(true);
  return path.join(work, packed!.filename);
}

describe('the packed client package', () => {
  it('installs into an empty folder and places an order from there', async () => {
    const tarball = await pack();
    expect(path.basename(tarball)).toMatch(/^book-order-client-.*\.tgz$/);
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: app });
    expect(fs.readdirSync(path.join(app, 'node_modules')).filter((f) => !f.startsWith('.'))).toEqual([
      'book-order-client',
    ]);

    const buyer = await service.client('packed caller');
    fs.writeFileSync(
      path.join(app, 'place.mjs'),
      `import { OrdersClient, OrderApiError } from 'book-order-client';
const client = new OrdersClient({ baseUrl: process.env.API_URL, accessKey: process.env.ACCESS_KEY, secretKey: process.env.SECRET_KEY });
const placed = await client.placeOrder(JSON.parse(process.env.ORDER), { requestId: 'from-the-tarball' });
const refused = await client.getOrder(999999999).catch((e) => e);
console.log(JSON.stringify({ placed, refused: refused instanceof OrderApiError ? refused.svcStatus : String(refused) }));
`,
    );
    const { stdout } = await run(process.execPath, ['place.mjs'], {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        API_URL: baseUrl,
        ACCESS_KEY: buyer.accessKey,
        SECRET_KEY: buyer.secretKey,
        ORDER: JSON.stringify(orderBody(buyer.ccToken)),
      },
    });
    const { placed, refused } = JSON.parse(stdout);
    expect(placed).toMatchObject({ orderId: expect.any(Number), dryrun: false });
    expect(refused).toEqual([4041]);
    expect(
      await service.probe.scalar('SELECT count(*) FROM orders WHERE client_id = ?', buyer.clientId),
    ).toBe(1);

    // Its declarations serve a TypeScript caller: a right order type-checks, a wrong one does not.
    const check = (order: string) => {
      const file = path.join(app, 'check.ts');
      fs.writeFileSync(
        file,
        `import { OrdersClient, type OrderRequest, type PlaceOrdersResult } from 'book-order-client';
const client = new OrdersClient({ baseUrl: 'http://x', accessKey: 'a', secretKey: 's' });
const order: OrderRequest = ${order};
export const placed: Promise<number> = client.placeOrder(order).then((o) => o.orderId);
export const all: Promise<PlaceOrdersResult[]> = client.placeOrders([{ requestId: 'r', ...order }]);
`,
      );
      const program = ts.createProgram([file], {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        typeRoots: [path.join(ROOT, 'node_modules/@types')],
        types: ['node'],
      });
      return ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    };
    expect(check(JSON.stringify(orderBody('tok')))).toEqual([]);
    expect(check(JSON.stringify({ ...orderBody('tok'), shippingMode: 'X' })).join('\n')).toMatch(/"X"/);
  });
});
