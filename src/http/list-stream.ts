import { loopTurns } from '../services/loop-turns.js';

/**
 * Characters of a streamed list gathered before each write: ~64 KiB (more where the text is not ASCII), whole
 * entries, so a write is at most this plus one entry (an order of 250 items is ~15 KB).
 */
export const LIST_WRITE_CHARS = 64 * 1024;

/** Where a list is written: an HTTP response, or a test's fake of one. */
export interface ListSink {
  readonly destroyed: boolean;
  write(chunk: string): boolean;
  end(chunk: string): unknown;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/**
 * Writes `{"<key>": [...entries]}` in pieces of ~LIST_WRITE_CHARS: after a write the socket refuses (its buffer
 * full) it waits for 'drain', and it lets other requests run once it has held the event loop its turn
 * (`turn`, loopTurns), so a large answer (a batch's is several MB) neither holds the loop nor piles up in
 * memory behind a slow reader. Stops, without ending, when the client has gone. `entries` is read once, in order: a
 * generator may hand each out as its turn comes (the batch lets each answer go once written).
 */
export async function writeJsonList(
  out: ListSink,
  key: string,
  entries: Iterable<unknown>,
  turn: () => Promise<void> = loopTurns(),
): Promise<void> {
  let text = `{${JSON.stringify(key)}:[`;
  let first = true;
  for (const entry of entries) {
    await turn();
    if (out.destroyed) return;
    text += (first ? '' : ',') + JSON.stringify(entry);
    first = false;
    if (text.length < LIST_WRITE_CHARS) continue;
    const taken = out.write(text);
    text = '';
    if (!taken && !(await drained(out))) return;
  }
  if (!out.destroyed) out.end(`${text}]}`);
}

/** Resolves true once the sink has taken what it holds, false if it closed first. */
function drained(out: ListSink): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = () => settle(true);
    const onClose = () => settle(false);
    const settle = (ok: boolean) => {
      out.off('drain', onDrain);
      out.off('close', onClose);
      resolve(ok);
    };
    out.once('drain', onDrain);
    out.once('close', onClose);
  });
}
