/** The `Svc-Status` catalogue of docs/api.md#status-codes; a failure's first three digits are its HTTP status. */
export const SvcStatus = {
  RETRIEVED: 2000,
  DRY_RUN_OK: 2002,
  DUPLICATE_PROCESSING: 2003,
  BATCH_ANSWERED: 2004,
  CREATED: 2010,
  MALFORMED: 4000,
  BAD_CARD: 4001,
  LISTINGS_PROBLEM: 4002,
  INVALID_JSON: 4003,
  AUTH_FAILED: 4010,
  DATE_MISSING: 4011,
  DATE_UNPARSABLE: 4012,
  DATE_SKEWED: 4013,
  KEY_UNKNOWN: 4014,
  KEY_DISABLED: 4015,
  SIGNATURE_MISSING: 4016,
  SIGNATURE_MISMATCH: 4017,
  REQUEST_ID_MISSING: 4018,
  ORDER_NOT_FOUND: 4041,
  NO_SUCH_RESOURCE: 4042,
  METHOD_NOT_ALLOWED: 4050,
  NOT_ACCEPTABLE: 4060,
  REQUEST_TIMEOUT: 4080,
  REQUEST_ID_CONFLICT: 4090,
  TOO_LARGE: 4130,
  UNSUPPORTED_MEDIA_TYPE: 4150,
  INVALID: 4220,
  RATE_LIMITED: 4291,
  AUTH_LOCKED: 4292,
  CARD_TESTING_LOCKED: 4293,
  HEADERS_TOO_LARGE: 4310,
  INTERNAL: 5000,
  UNAVAILABLE: 5030,
} as const;

export type SvcStatusCode = (typeof SvcStatus)[keyof typeof SvcStatus];

export function httpStatusOf(code: number): number {
  return Math.floor(code / 10);
}

/** The comma-separated header value: ascending, each code once. */
export function svcStatusHeader(codes: readonly number[]): string {
  return [...new Set(codes)].sort((a, b) => a - b).join(', ');
}
