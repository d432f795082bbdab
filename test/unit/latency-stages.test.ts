// bench-latency --stages reads a lone order's stages off its spans: each stage is the time between two
// boundaries of the order's trace, averaged over the orders less their fastest and slowest tenth.
import { describe, expect, it } from 'vitest';
import { stagesOf } from '../../scripts/bench/latency-stages.js';
import type { ReceivedSpan } from '../helpers/otlp-receiver.js';

const ms = (n: number) => BigInt(Math.round(n * 1e6));

function span(traceId: string, service: string, name: string, start: number, end: number): ReceivedSpan {
  return {
    service,
    traceId,
    spanId: `${name}-${start}`,
    parentSpanId: undefined,
    name,
    kind: name === 'POST' ? 2 : 1,
    startNs: ms(start),
    endNs: ms(end),
    attributes: {},
  };
}

/** One lone order's spans, its request taken at `t0`, every stage `step` ms after the one before. */
function order(traceId: string, t0: number, step: number): ReceivedSpan[] {
  const at = (i: number) => t0 + i * step;
  return [
    span(traceId, 'web', 'POST', at(0), at(11)),
    span(traceId, 'web', 'store.orders.accept', at(1), at(2)),
    span(traceId, 'web', 'add orders.process-order', at(2), at(3)),
    span(traceId, 'worker', 'process orders', at(4), at(8)),
    span(traceId, 'worker', 'store.processing.beginAttempt', at(4), at(5)),
    span(traceId, 'worker', 'payment.authorize', at(5), at(6)),
    span(traceId, 'worker', 'store.processing.settle', at(6), at(7)),
    span(traceId, 'worker', 'publish', at(8), at(8.5)),
    span(traceId, 'web', 'store.orders.get', at(9), at(10)),
  ];
}

describe('the stages of a lone order', () => {
  it('when every order has each boundary, then each stage is the mean time between its boundaries', () => {
    const spans = Array.from({ length: 10 }, (_, i) => order(`t${i}`, 1000 * i, 0.5)).flat();
    const report = stagesOf(spans);
    expect(report.orders).toBe(10);
    expect(report.stages).toHaveLength(11);
    for (const stage of report.stages) {
      expect(stage.ms).toBeCloseTo(0.5, 6);
      expect(stage.orders).toBe(10);
    }
    expect(report.waitP50).toBeCloseTo(5.5, 6);
  });

  it('when one order in ten is slow, then it is left out of the mean', () => {
    const spans = [
      ...Array.from({ length: 9 }, (_, i) => order(`t${i}`, 1000 * i, 0.5)).flat(),
      ...order('slow', 20_000, 30),
    ];
    expect(stagesOf(spans).stages[0]!.ms).toBeCloseTo(0.5, 6);
  });

  it('when a trace has no request of the web (a clock pass), or an order lacks a span, then it is not counted there', () => {
    const spans = [
      ...order('t0', 0, 1).filter((s) => s.name !== 'publish'),
      span('clock', 'clock', 'reconcile.pass', 0, 5),
    ];
    const report = stagesOf(spans);
    expect(report.orders).toBe(1);
    const announced = report.stages.filter((s) => s.to.includes('announced') || s.from.includes('announced'));
    expect(announced.map((s) => s.orders)).toEqual([0, 0]);
    expect(announced.every((s) => Number.isNaN(s.ms))).toBe(true);
  });

  it('when the web answers from the end it heard, without reading the order back, then the answer runs from the announcement', () => {
    const spans = Array.from({ length: 10 }, (_, i) =>
      order(`t${i}`, 1000 * i, 0.5).filter((s) => s.name !== 'store.orders.get'),
    ).flat();
    const { stages } = stagesOf(spans);
    expect(stages.filter((s) => s.orders === 0).map((s) => s.to)).toEqual([
      'web: hears it, when it reads the order back (no span: the start of that read)',
      'web: order read back',
    ]);
    // From the announcement's start (8 steps in) to the request's end (11): 1.5 ms.
    expect(stages.at(-1)).toMatchObject({ to: 'web: answer written (request span ends)', orders: 10 });
    expect(stages.at(-1)!.ms).toBeCloseTo(1.5, 6);
  });
});
