// Responses of the OpenAPI document: each failure is one named component that the operations refer to.
import { SvcStatus, httpStatusOf } from './status-codes.js';

const schemaRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });
export const json = (id: string) => ({ 'application/json': { schema: schemaRef(id) } });

const codesOf = (httpStatus: number) =>
  Object.entries(SvcStatus).filter(([, code]) => httpStatusOf(code) === httpStatus);

// Every code of the header starts with the HTTP status; codes are ascending and comma-separated.
function svcStatus(httpStatus: number) {
  const codes = codesOf(httpStatus);
  const names = codes.map(([name, code]) => `${code} ${name}`).join(', ');
  return {
    description: `Every Svc-Status code that applies (docs/api.md#status-codes): ${names}`,
    required: true,
    schema: { type: 'string', pattern: `^(\\d{4}, )*${httpStatus}\\d(, \\d{4})*$` },
    example: String(codes[0]?.[1] ?? httpStatus * 10),
  };
}

const echoedRequestId = {
  description: 'The Svc-RequestId of the request, when it had one',
  schema: { type: 'string' },
};

const FAILURES = {
  BadRequest: [
    400,
    'Malformed request (HTTP, JSON or the shape of the body), a listings problem or an unknown card',
  ],
  Unauthorized: [401, 'Authentication failed: 4010 with the reason'],
  NotFound: [404, 'No such order for this client (another client’s order is reported the same way)'],
  MethodNotAllowed: [405, 'The path does not support the method; Allow lists those it does'],
  NotAcceptable: [406, 'Accept excludes application/json'],
  RequestTimeout: [408, 'The request did not arrive whole in time; the connection is closed'],
  Conflict: [409, 'Svc-RequestId already used by this access key for a different request'],
  ContentTooLarge: [413, 'Body larger than 1 MiB'],
  UnsupportedMediaType: [
    415,
    'A Content-Type other than application/json, or a Content-Encoding not supported',
  ],
  UnprocessableContent: [422, 'Request invalid: one message per field or parameter problem'],
  TooManyRequests: [429, 'Rate limit exceeded or access key or ordering locked; retry after Retry-After'],
  RequestHeaderFieldsTooLarge: [431, 'Request headers too large; the connection is closed'],
  InternalError: [500, 'Internal error; nothing half-written, retry with the same Svc-RequestId'],
  ServiceUnavailable: [
    503,
    'A dependency is down, the service is stopping, or too many orders wait to be processed; retry later',
  ],
} as const satisfies Record<string, readonly [number, string]>;
export type Failure = keyof typeof FAILURES;

const extraHeaders: Partial<Record<Failure, Record<string, object>>> = {
  MethodNotAllowed: { Allow: { required: true, schema: { type: 'string' } } },
  TooManyRequests: {
    'Retry-After': {
      description: 'Seconds until a retry can succeed',
      required: true,
      schema: { type: 'integer', minimum: 1 },
    },
  },
  ServiceUnavailable: {
    'Retry-After': {
      description: 'Seconds until a retry can succeed; set when too many orders are unsettled (backpressure)',
      required: false,
      schema: { type: 'integer', minimum: 1 },
    },
  },
};

/** The components' failure responses: ErrorResponse, Svc-Status of that HTTP status, and their own headers. */
export function failureResponses() {
  return Object.fromEntries(
    Object.entries(FAILURES).map(([name, [status, description]]) => [
      name,
      {
        description,
        headers: {
          'Svc-Status': svcStatus(status),
          'Svc-RequestId': echoedRequestId,
          ...extraHeaders[name as Failure],
        },
        content: json('ErrorResponse'),
      },
    ]),
  );
}

// Any request to the signed paths can meet these: the HTTP parser, the body reader, authentication, limits.
const COMMON: Failure[] = [
  'BadRequest',
  'Unauthorized',
  'MethodNotAllowed',
  'NotAcceptable',
  'RequestTimeout',
  'ContentTooLarge',
  'UnsupportedMediaType',
  'UnprocessableContent',
  'TooManyRequests',
  'RequestHeaderFieldsTooLarge',
  'InternalError',
  'ServiceUnavailable',
];

/** The responses of an operation: its 200 with the success codes it gives, and its failures by reference. */
export function responses(
  successes: Record<number, string>,
  schema: string,
  own: Failure[] = [],
  headers: Record<string, object> = {},
) {
  const codes = Object.keys(successes);
  const ok = {
    description: Object.entries(successes)
      .map(([code, meaning]) => `${code} ${meaning}`)
      .join(', '),
    headers: {
      'Svc-Status': { required: true, schema: { type: 'string', enum: codes } },
      'Svc-RequestId': echoedRequestId,
      ...headers,
    },
    content: json(schema),
  };
  const failures = [...COMMON, ...own].sort((a, b) => FAILURES[a][0] - FAILURES[b][0]);
  return {
    200: ok,
    ...Object.fromEntries(
      failures.map((name) => [FAILURES[name][0], { $ref: `#/components/responses/${name}` }]),
    ),
  };
}
