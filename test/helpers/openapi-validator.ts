// Checks a response the tests receive against the OpenAPI document the service serves: the status code is one
// its operation lists, the required headers are there and valid, the body matches the response's schema.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { loadConfig } from '../../src/config/config.js';
import { marketplaceDomains } from '../../src/domain/marketplace.js';
import { openApiDocument } from '../../src/http/openapi.js';

export interface ObservedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

interface Header {
  required?: boolean;
  schema: object;
}
interface Response {
  headers?: Record<string, Header>;
  content?: Record<string, { schema: { $ref: string } }>;
}
type Operation = { operationId: string; responses: Record<string, Response | { $ref: string }> };
type PathItem = Partial<Record<'get' | 'post', Operation>>;
export type Document = { servers: { url: string }[]; paths: Record<string, PathItem>; components: object };

const addFormats = formats as unknown as (ajv: Ajv2020) => void;

/**
 * The document's schemas as validators, each compiled on first use and kept: `schema('#/components/schemas/X')`
 * for a body, `header(schema)` for a header value (text, so an integer header is checked as the number it spells).
 */
export function compileDocument(doc: Document) {
  const ajv = new Ajv2020({ allErrors: true, strict: true, multipleOfPrecision: 9 });
  addFormats(ajv);
  // The document is the root schema, so its `#/components/...` references resolve as they are written.
  ajv.addVocabulary(['openapi', 'info', 'servers', 'tags', 'paths', 'webhooks', 'components']);
  ajv.addSchema(doc, 'openapi.json');
  const headerAjv = new Ajv2020({ strict: true, coerceTypes: true });
  const compiled = new Map<string, ValidateFunction>();
  const cached = (key: string, make: () => ValidateFunction | undefined) => {
    let validate = compiled.get(key);
    if (!validate) {
      validate = make();
      if (!validate) throw new Error(`the document has no schema ${key}`);
      compiled.set(key, validate);
    }
    return validate;
  };
  return {
    schema: (ref: string) => cached(ref, () => ajv.getSchema(`openapi.json${ref}`)),
    header: (schema: object) =>
      cached(`header ${JSON.stringify(schema)}`, () =>
        headerAjv.compile({ type: 'object', properties: { value: schema } }),
      ),
  };
}

/** A checker of responses against one document. */
export function createResponseChecker(doc: Document) {
  const validators = compileDocument(doc);
  const base = doc.servers[0]?.url ?? '';
  const routes = Object.entries(doc.paths).map(([template, item]) => {
    const pattern = template.replace(/\{[^}]+\}/g, '[^/]+');
    return { template, item, regex: new RegExp(`^${base}${pattern}/?$`) };
  });
  const resolve = (response: Response | { $ref: string }): Response => {
    if (!('$ref' in response)) return response;
    const name = response.$ref.replace('#/components/responses/', '');
    return (doc.components as { responses: Record<string, Response> }).responses[name]!;
  };

  /** Problems of one response; none when it conforms or its path is not in the document. */
  return function problemsOf(method: string, pathWithQuery: string, res: ObservedResponse): string[] {
    const path = pathWithQuery.split('?')[0]!;
    const route = routes.find(({ regex }) => regex.test(path));
    if (!route) return [];
    const verb = (method === 'HEAD' ? 'get' : method.toLowerCase()) as keyof PathItem;
    const operation = route.item[verb];
    const where = `${method} ${route.template} (${operation?.operationId ?? 'no such operation'})`;
    // A method the path does not have gets the path's 405 answer, whichever operation lists it.
    const listed = operation
      ? operation.responses[String(res.status)]
      : res.status === 405
        ? Object.values(route.item)[0]?.responses['405']
        : undefined;
    if (!listed) return [`${where}: HTTP ${res.status} is not a documented response`];
    const response = resolve(listed);
    const problems: string[] = [];
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const value = res.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`${where} ${res.status}: header ${name} is missing`);
        continue;
      }
      const validate = validators.header(header.schema);
      if (!validate({ value }))
        problems.push(`${where} ${res.status}: header ${name}: ${value} ${errors(validate)}`);
    }
    const content = response.content?.['application/json'];
    if (!content || method === 'HEAD') return problems;
    const type = String(res.headers['content-type'] ?? '');
    if (!type.startsWith('application/json'))
      return [...problems, `${where} ${res.status}: Content-Type is ${type || 'missing'}, not JSON`];
    const validate = validators.schema(content.schema.$ref);
    if (!validate(res.body)) problems.push(`${where} ${res.status}: body ${errors(validate)}`);
    return problems;
  };
}

function errors(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}

let checker: ReturnType<typeof createResponseChecker> | undefined;

/**
 * A supertest assertion: the response conforms to the document the app serves (built with the default
 * marketplace names; responses do not depend on them). Compiled once per test process.
 */
export function conformsToDocument(method: string, pathWithQuery: string) {
  return (res: ObservedResponse): void => {
    checker ??= createResponseChecker(defaultDocument());
    const problems = checker(method, pathWithQuery, res);
    if (problems.length)
      throw new Error(`response does not match the OpenAPI document:\n${problems.join('\n')}`);
  };
}

/** The seven domains of the default marketplace names, as the app serves them without configuration. */
export const defaultDomains = (): string[] => [...marketplaceDomains(loadConfig({}).marketplaceNames).keys()];

export const defaultDocument = () => openApiDocument(defaultDomains());
