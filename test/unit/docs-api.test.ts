// docs/api.md stays true to the code: its signing example is recomputed with the service's own signing code,
// its table of status codes names every code the service sends, each with its HTTP status, and its table of
// endpoints names every signed endpoint the router serves (ENDPOINTS) and no other.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sign, stringToSign } from '../../src/auth/signature.js';
import { parseCatalog } from '../../src/domain/catalog.schema.js';
import { openApiPath } from '../../src/http/endpoints/endpoint.js';
import { ENDPOINTS } from '../../src/http/endpoints/index.js';
import { SvcStatus, httpStatusOf } from '../../src/http/status-codes.js';

const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/api.md'), 'utf8');

/** The body of the `## title` (or `### title`) section, up to the next heading of that level or above. */
function section(title: string): string {
  const start = doc.search(new RegExp(`^#{2,3} ${title}$`, 'm'));
  expect(start, `docs/api.md has a section "${title}"`).toBeGreaterThanOrEqual(0);
  const rest = doc.slice(start).split('\n').slice(1).join('\n');
  const end = rest.search(/^#{2,3} /m);
  return end === -1 ? rest : rest.slice(0, end);
}

const textBlocks = (text: string) => [...text.matchAll(/^```text\n([\s\S]*?)^```/gm)].map((m) => m[1]!);

describe('docs/api.md', () => {
  it("when its worked example is signed by the service's code, then the string to sign and the signature are the ones it prints", () => {
    const example = section('Worked example');
    const [request, printedString, printedSignature] = textBlocks(example);
    const [requestLine, ...headerLines] = request!.trim().split('\n');
    const [method, target] = requestLine!.split(' ');
    const [pathPart, rawQuery = ''] = target!.split('?');
    const headers = Object.fromEntries(headerLines.map((line) => line.split(': ') as [string, string]));
    const secretKey = /secret key is `(sk_\w+)`/.exec(example)![1]!;
    const parts = {
      method: method!,
      path: pathPart!,
      rawQuery,
      date: headers['Svc-Date']!,
      requestId: headers['Svc-RequestId']!,
      body: '',
    };
    expect(printedString!.trimEnd()).toBe(stringToSign(parts));
    expect(printedSignature!.trim()).toBe(sign(secretKey, parts));
    // Its Node snippet, run as printed, prints that signature too.
    const snippet = /^```js\n([\s\S]*?)^```/m.exec(example)![1]!;
    const printed = execFileSync(process.execPath, ['--input-type=module', '-e', snippet], {
      encoding: 'utf8',
    });
    expect(printed.trim()).toBe(printedSignature!.trim());
  });

  it('when the service can send a Svc-Status code, then the table names it with its HTTP status', () => {
    const rows = new Map(
      [...section('Status codes').matchAll(/^\| (\d{4}) \| (\d{3}) \|/gm)].map((m) => [
        Number(m[1]),
        Number(m[2]),
      ]),
    );
    // Every success is HTTP 200 (2010 included); a failure's status is its code's first three digits.
    const httpOf = (code: number) => (code < 4000 ? 200 : httpStatusOf(code));
    for (const code of Object.values(SvcStatus)) expect([code, rows.get(code)]).toEqual([code, httpOf(code)]);
    expect([...rows.keys()].sort()).toEqual(Object.values(SvcStatus).sort());
  });

  it('when a link points inside the page, then the heading it names exists', () => {
    const anchors = new Set(
      [...doc.matchAll(/^#{1,3} (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const [, anchor] of doc.matchAll(/\]\(#([^)]+)\)/g)) expect(anchors).toContain(anchor);
  });

  it('when the catalog example is imported, then it is a valid catalog file', () => {
    const example = /^```json\n([\s\S]*?)^```/m.exec(section('Catalog'))![1]!;
    expect(parseCatalog(JSON.parse(example))).toMatchObject({ ok: true });
  });

  it('when the router serves a signed endpoint, then the endpoint table names it as signed, and names no other', () => {
    const rows = [...section('Endpoints').matchAll(/^\| `(GET|POST) (\/\S+)` \| (yes|no) \|/gm)].map(
      ([, method, route, signed]) => ({ method, route, signed }),
    );
    const signedRows = rows.filter((row) => row.signed === 'yes').map((row) => `${row.method} ${row.route}`);
    const served = ENDPOINTS.map((endpoint) => `${endpoint.method} /v1${openApiPath(endpoint.path)}`);
    expect([...signedRows].sort()).toEqual([...served].sort());
    // The unsigned rows are paths the web answers outside the signed API, none of them an endpoint's.
    for (const row of rows.filter((r) => r.signed === 'no'))
      expect(served).not.toContain(`${row.method} ${row.route}`);
    expect(rows.length).toBeGreaterThan(served.length);
  });
});
