/** Any failure of a request: an answer other than 2xx, or no answer at all (`httpStatus` 0) after the retries. */
export class OrderApiError extends Error {
  override readonly name = 'OrderApiError';
  /** HTTP status of the last answer; 0 when none came (network error, time-out). */
  readonly httpStatus: number;
  /** The `Svc-Status` codes of the last answer, ascending; empty when none came. */
  readonly svcStatus: number[];
  /** One readable line per problem, as the service wrote them (or what went wrong on the way). */
  readonly messages: string[];
  /** The `Svc-RequestId` that was sent: send the same request with it again to retry safely. */
  readonly requestId: string;
  /** Whether the same request may succeed later (the client had retried it `maxRetries` times already). */
  readonly retryable: boolean;

  constructor(fields: {
    httpStatus: number;
    svcStatus: number[];
    messages: string[];
    requestId: string;
    retryable: boolean;
    cause?: unknown;
  }) {
    const codes = fields.svcStatus.length ? ` [${fields.svcStatus.join(', ')}]` : '';
    super(
      `${fields.httpStatus ? `HTTP ${fields.httpStatus}` : 'no answer'}${codes}: ${fields.messages.join('; ')}`,
      fields.cause === undefined ? undefined : { cause: fields.cause },
    );
    this.httpStatus = fields.httpStatus;
    this.svcStatus = fields.svcStatus;
    this.messages = fields.messages;
    this.requestId = fields.requestId;
    this.retryable = fields.retryable;
  }
}

/** A webhook delivery that is not the service's: bad or missing signature, stale date, or an unreadable body. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}
