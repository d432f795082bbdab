import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import type { ErrorBody } from './errors.js';
import { SvcStatus, httpStatusOf, svcStatusHeader, type SvcStatusCode } from './status-codes.js';

/** Longer than a load balancer's usual idle timeout (60 s): the balancer, not the service, closes idle connections. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * The timeouts of the web server: a request must arrive whole, headers and body, within `timeoutMs` of its first
 * byte. Node looks for late requests every `connectionsCheckingInterval`, so its deadlines are that much shorter.
 */
export function serverTimeouts(timeoutMs: number): http.ServerOptions {
  const checkEveryMs = Math.min(1000, Math.floor(timeoutMs / 4));
  const deadline = timeoutMs - checkEveryMs;
  return {
    headersTimeout: deadline,
    requestTimeout: deadline,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: checkEveryMs,
  };
}

/** The HTTP server of an app, with its timeouts and with what node's parser refuses answered as the API answers. */
export function createHttpServer(
  app: http.RequestListener & { serverOptions?: http.ServerOptions },
  config: Pick<Config, 'HTTP_REQUEST_TIMEOUT_MS'>,
  logger: Logger,
): http.Server {
  // The app's own request and response classes, when it has them (app.ts, expressClasses).
  const options = { ...serverTimeouts(config.HTTP_REQUEST_TIMEOUT_MS), ...app.serverOptions };
  const server = http.createServer(options, app);
  server.on('clientError', answerClientError(logger, config.HTTP_REQUEST_TIMEOUT_MS));
  return server;
}

/**
 * The metrics listener's bounds. A scraper sends one small GET at once and waits for its answer: a connection whose
 * headers take longer than 5 s, or whose request is not whole in 10 s, is closed (dribbling ones included), and
 * at most METRICS_MAX_CONNECTIONS are open at once. Idle keep-alive connections stay 65 s so that Prometheus
 * reuses one between scrapes, but at the cap every connection not being answered is closed to make room: idle or
 * slow ones cannot keep a scraper out.
 */
export const METRICS_MAX_CONNECTIONS = 32;

export function createMetricsServer(listener: http.RequestListener): http.Server {
  const server = http.createServer(
    {
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      headersTimeout: 5_000,
      requestTimeout: 10_000,
      connectionsCheckingInterval: 1_000,
    },
    listener,
  );
  server.maxConnections = METRICS_MAX_CONNECTIONS;
  const open = new Set<Duplex>();
  server.on('connection', (socket: Duplex) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  // The connection past the cap is dropped, and every one not being answered (idle, or still sending its
  // request) is closed, so the scraper's next try gets in.
  server.on('drop', () => {
    for (const socket of open) if (!inFlight(socket)) socket.destroy();
  });
  return server;
}

/** How long, and how many more bytes, a connection answered before its request's body was read is read on. */
export const LINGER = { ms: 5_000, bytes: 64 * 2 ** 20 };

/**
 * nginx's lingering close, for a request answered before its body was read (4130: over 1 MiB): once the answer is
 * written, the connection's sending side is ended and what the client still sends is read and dropped, for at most
 * LINGER.ms and LINGER.bytes (or until the client ends its side), before the socket is closed. Closed at once, the
 * connection would be reset while the client still sends, and its TCP stack would drop the answer unread.
 */
export function lingerAfterAnswer(req: http.IncomingMessage): void {
  // Node ends a `Connection: close` connection, once answered, with destroySoon: end, then destroy once flushed.
  const socket = req.socket as Socket & { destroySoon?: () => void };
  socket.destroySoon = function lingeringClose(this: Socket) {
    let drained = 0;
    const close = () => this.destroy();
    const timer = setTimeout(close, LINGER.ms);
    this.once('close', () => clearTimeout(timer)).once('end', close);
    this.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > LINGER.bytes) close();
    });
    this.end();
    req.resume();
  };
}

type Refusal = [SvcStatusCode, string];

const MALFORMED = SvcStatus.MALFORMED;
/** What node's parser (llhttp) refuses, by its error code; any other HPE_ code is 4000 too. */
const PARSER_REFUSALS: Record<string, Refusal> = {
  HPE_HEADER_OVERFLOW: [SvcStatus.HEADERS_TOO_LARGE, `headers: larger than ${http.maxHeaderSize / 1024} KiB`],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [SvcStatus.TOO_LARGE, 'body: chunk extensions too large'],
  HPE_INVALID_METHOD: [MALFORMED, 'request: not an HTTP method this service knows'],
  HPE_INVALID_URL: [MALFORMED, 'request: not a valid request target'],
  HPE_INVALID_VERSION: [MALFORMED, 'request: not HTTP/1.0 or HTTP/1.1'],
  HPE_INVALID_HEADER_TOKEN: [
    MALFORMED,
    'headers: a header name or value holds a character HTTP does not allow',
  ],
  HPE_INVALID_CONTENT_LENGTH: [MALFORMED, 'headers: Content-Length is not a number'],
  HPE_UNEXPECTED_CONTENT_LENGTH: [
    MALFORMED,
    'headers: Content-Length given twice, or with Transfer-Encoding',
  ],
  HPE_INVALID_TRANSFER_ENCODING: [
    MALFORMED,
    'headers: Transfer-Encoding must end in chunked and not come with Content-Length',
  ],
  HPE_INVALID_CHUNK_SIZE: [MALFORMED, 'body: not valid chunked encoding'],
};

/** The answer to an error of node's HTTP parser or of its timeouts, by the error's code; none for a lost socket. */
function refusalOf(code: string | undefined, timeoutMs: number): Refusal | undefined {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return [SvcStatus.REQUEST_TIMEOUT, `request: not received whole within ${timeoutMs / 1000} s`];
  if (!code?.startsWith('HPE_')) return undefined;
  return PARSER_REFUSALS[code] ?? [MALFORMED, 'request: not a valid HTTP/1.1 request'];
}

/** The response node would write for the socket's request, when it has one (a timeout while a body is read). */
function inFlight(socket: Duplex): http.ServerResponse | undefined {
  // `_httpMessage` is node's own link from a socket to its response; node's default handler reads it too.
  return (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
}

/**
 * Answers what node's HTTP parser refuses (bad bytes, conflicting lengths, headers too large, a timeout) with an
 * ErrorResponse and Svc-Status in a raw HTTP/1.1 response, then closes the connection. The request id is
 * echoed when node had read the headers (a timeout while the body came), else it is "".
 */
export function answerClientError(logger: Logger, timeoutMs: number) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    const refusal = refusalOf(err.code, timeoutMs);
    const response = inFlight(socket);
    if (!refusal || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const [code, message] = refusal;
    const sent = response?.req.headers['svc-requestid'];
    const requestId = typeof sent === 'string' && /^[\x21-\x7e]{1,36}$/.test(sent) ? sent : '';
    logger.info({ code: err.code, svcStatus: code, requestId }, 'request refused by the HTTP parser');
    socket.end(rawErrorResponse(code, message, requestId), () => socket.destroy());
  };
}

function rawErrorResponse(code: SvcStatusCode, message: string, requestId: string): string {
  const status = httpStatusOf(code);
  const body: ErrorBody = { requestId, messages: [message] };
  const json = JSON.stringify(body);
  return [
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(json)}`,
    `Svc-Status: ${svcStatusHeader([code])}`,
    ...(requestId ? [`Svc-RequestId: ${requestId}`] : []),
    'Connection: close',
    '',
    json,
  ].join('\r\n');
}
