// A streamed list (http/list-stream.ts, the batch's answer): pieces of ~64 KiB, the sink's backpressure
// respected, turns of the event loop taken by time, and nothing more written once the client has gone.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LIST_WRITE_CHARS, writeJsonList, type ListSink } from '../../src/http/list-stream.js';
import { loopTurns } from '../../src/services/loop-turns.js';

/** A socket that refuses every write until it has drained, as a slow reader's would; `drain()` lets it take more. */
class SlowSink extends EventEmitter implements ListSink {
  destroyed = false;
  writes: string[] = [];
  ended: string | null = null;
  full = false;
  write(chunk: string): boolean {
    if (this.full) throw new Error('written while the sink was full');
    this.writes.push(chunk);
    this.full = true;
    return false;
  }
  end(chunk: string) {
    this.ended = chunk;
  }
  drain() {
    this.full = false;
    this.emit('drain');
  }
  text() {
    return this.writes.join('') + (this.ended ?? '');
  }
}

const entries = Array.from({ length: 400 }, (_, n) => ({
  requestId: `r-${n}`,
  status: [2010],
  order: {
    items: Array.from({ length: n % 50 }, (_, i) => ({ orderItemId: n * 1000 + i, title: 'é'.repeat(20) })),
  },
}));
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('a large list streamed to a slow reader (writeJsonList)', () => {
  it('arrives whole, in pieces of ~64 KiB, each written only once the reader has taken the one before', async () => {
    const sink = new SlowSink();
    const done = writeJsonList(sink, 'results', entries, async () => {});
    while (sink.ended === null) {
      await settled();
      sink.drain();
    }
    await done;
    expect(JSON.parse(sink.text())).toEqual({ results: entries });
    const largest = Math.max(...entries.map((e) => JSON.stringify(e).length));
    expect(sink.writes.length).toBeGreaterThan(5);
    for (const piece of sink.writes) {
      expect(piece.length).toBeGreaterThanOrEqual(LIST_WRITE_CHARS);
      expect(piece.length).toBeLessThan(LIST_WRITE_CHARS + largest + 1);
    }
    expect(sink.listenerCount('drain') + sink.listenerCount('close')).toBe(0);
  });

  it('lets other requests run once it has held the loop its budget, by time, not by entries', async () => {
    let now = 0;
    const turns: number[] = [];
    const sink = new SlowSink();
    sink.write = (chunk) => (sink.writes.push(chunk), true);
    const list = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const turn = loopTurns(
      10,
      () => now,
      async () => void turns.push(now),
    );
    // Each entry costs 4 ms of the fake clock: a turn holds three.
    await writeJsonList(sink, 'x', list, async () => {
      await turn();
      now += 4;
    });
    expect(JSON.parse(sink.text())).toEqual({ x: list });
    expect(turns).toEqual([12, 24]);
  });

  it('takes the entries of a generator only as it writes them: a stopped reader holds back the rest', async () => {
    const sink = new SlowSink();
    let taken = 0;
    function* counted() {
      for (const entry of entries) {
        taken++;
        yield entry;
      }
    }
    const done = writeJsonList(sink, 'results', counted(), async () => {});
    await settled();
    expect(sink.writes).toHaveLength(1);
    // The reader has stopped: only the entries of the first piece have been taken.
    expect(taken).toBe(JSON.parse(`${sink.writes[0]}]}`).results.length);
    expect(taken).toBeLessThan(entries.length);
    while (sink.ended === null) {
      sink.drain();
      await settled();
    }
    await done;
    expect(taken).toBe(entries.length);
    expect(JSON.parse(sink.text())).toEqual({ results: entries });
  });

  it('stops writing, and does not end, once the client has gone', async () => {
    const sink = new SlowSink();
    const done = writeJsonList(sink, 'results', entries, async () => {});
    await settled();
    expect(sink.writes).toHaveLength(1);
    sink.destroyed = true;
    sink.emit('close');
    await done;
    expect(sink.writes).toHaveLength(1);
    expect(sink.ended).toBeNull();
    expect(sink.listenerCount('drain') + sink.listenerCount('close')).toBe(0);
  });
});
