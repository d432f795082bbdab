// The client package as a caller gets it: `npm pack` of client/, the tarball installed into an empty folder with
// nothing else of this repository, an order placed from there by plain `node`, and its types checked there.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookSignature } from '../../client/src/webhook.js';
import { freePort } from '../../scripts/redis.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

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
  for (const entry of ['package.json', 'README.md', 'tsconfig.json', 'src'])
    fs.cpSync(path.join(ROOT, 'client', entry), path.join(copy, entry), { recursive: true });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: copy });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  expect(packed!.files.map((f) => f.path)).toEqual(expect.arrayContaining(['dist/index.d.ts', 'README.md']));
  const shipped = (file: string) => ['package.json', 'README.md'].includes(file) || file.startsWith('dist/');
  expect(packed!.files.every((f) => shipped(f.path))).toBe(true);
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
  }, 180_000);

  it("when client/README.md's examples run as printed against the service, then each does what it says", async () => {
    // After the test above: the tarball is installed in `app`.
    const readme = fs.readFileSync(path.join(ROOT, 'client/README.md'), 'utf8');
    const examples = [...readme.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
    const receiver = examples.find((code) => code.includes('.listen('))!;
    await service.startWorker();
    const buyer = await service.client('readme caller');
    const env = {
      PATH: process.env.PATH,
      API_URL: baseUrl,
      ACCESS_KEY: buyer.accessKey,
      SECRET_KEY: buyer.secretKey,
      CC_TOKEN: buyer.ccToken,
    };
    const outputs: string[] = [];
    for (const [i, code] of examples.entries()) {
      if (code === receiver) continue;
      fs.writeFileSync(path.join(app, `readme-${i}.mjs`), code);
      const { stdout, stderr } = await run(process.execPath, [`readme-${i}.mjs`], { cwd: app, env });
      expect(stderr).toBe('');
      outputs.push(stdout);
    }
    const [placed, signed, refused, many] = outputs;
    expect(placed).toMatch(/^one copy costs \d+(\.\d+)? USD\norder \d+ items \[ 5 \]\n$/);
    expect(signed).toBe('200 2000\n');
    expect(refused).toContain("404 [ 4041 ] [ 'orderId: no order 999999999' ]");
    expect(many).toMatch(/^po-0002 \[ 2010 \] \d+\npo-0003 \[ 2010 \] \d+\n(\d+ \S+Z\n){3}$/);

    // The receiver takes a delivery signed with its secret and refuses one that is not.
    fs.writeFileSync(path.join(app, 'receiver.mjs'), receiver);
    const port = await freePort();
    const secret = 'whsec_readme';
    const child = spawn(process.execPath, ['receiver.mjs'], {
      cwd: app,
      env: { PATH: process.env.PATH, PORT: String(port), WEBHOOK_SECRET: secret },
    });
    try {
      const body = JSON.stringify({
        eventId: 'evt_1',
        type: 'order.updated',
        createDate: new Date().toISOString(),
        sequence: 1,
        order: { orderId: 7, listings: [{ orderItems: [{ status: 5 }] }] },
      });
      const post = (signature: string, date = new Date().toISOString()) =>
        fetch(`http://127.0.0.1:${port}/orders`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'svc-event-id': 'evt_1',
            'svc-date': date,
            'svc-signature': signature,
          },
          body,
        }).then((res) => res.status);
      const date = new Date().toISOString();
      await until(
        () =>
          post('0'.repeat(64)).then(
            () => true,
            () => false,
          ),
        30_000,
        'the receiver listening',
      );
      expect(await post(webhookSignature(secret, date, 'evt_1', body), date)).toBe(204);
      expect(await post('0'.repeat(64))).toBe(401);
    } finally {
      child.kill();
    }
  }, 180_000);
});
