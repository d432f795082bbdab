// Raw HTTP/1.1 over a TCP socket, for what fetch and supertest refuse to send: malformed requests, bodies that
// never come, headers dribbled a byte at a time.
import net from 'node:net';

export interface RawAnswer {
  /** HTTP status of the answer; 0 when the server closed the socket without one. */
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from connecting to the server closing the socket (or to giving up). */
  ms: number;
  /** Whether the server closed the socket (as opposed to the wait running out). */
  closed: boolean;
}

export interface RawOptions {
  /** Bytes sent after `head`, one at a time, every `everyMs`, until the server answers or closes. */
  dribble?: { bytes: string; everyMs: number };
  /** Give up (and close the socket) after this long. */
  waitMs?: number;
}

/** Sends `head` on a fresh connection and reads until the server closes it. */
export function rawRequest(
  port: number,
  head: string | Buffer,
  options: RawOptions = {},
): Promise<RawAnswer> {
  const { dribble, waitMs = 10_000 } = options;
  return new Promise((resolve) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(head);
      if (!dribble) return;
      let at = 0;
      const timer = setInterval(() => {
        if (socket.destroyed || socket.writableEnded || at >= dribble.bytes.length) clearInterval(timer);
        else socket.write(dribble.bytes[at++]!);
      }, dribble.everyMs);
      socket.once('close', () => clearInterval(timer));
    });
    const giveUp = setTimeout(() => finish(false), waitMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => finish(true));
    let done = false;
    function finish(closed: boolean) {
      if (done) return;
      done = true;
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ ...parseAnswer(Buffer.concat(chunks).toString('latin1')), ms: Date.now() - started, closed });
    }
  });
}

export function parseAnswer(text: string): Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  const split = text.indexOf('\r\n\r\n');
  if (split === -1) return { status: 0, headers: {}, body: text };
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4) };
}
