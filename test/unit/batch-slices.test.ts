import { describe, expect, it } from 'vitest';
import { ITEMS_PER_SLICE, slicesOf } from '../../src/services/place-order-batch.js';

const order = (items: number) => ({ items: Array<number>(items).fill(0) });
const sizes = (orders: { items: unknown[] }[][]) => orders.map((slice) => slice.map((o) => o.items.length));

describe("a batch's real orders accepted in slices", () => {
  it(`holds at most ${ITEMS_PER_SLICE} items a slice, in the batch's order, an order larger than that alone`, () => {
    expect(slicesOf([])).toEqual([]);
    expect(sizes(slicesOf([order(1), order(2)]))).toEqual([[1, 2]]);
    expect(sizes(slicesOf(Array(5).fill(order(250))))).toEqual([[250, 250], [250, 250], [250]]);
    expect(sizes(slicesOf([order(100), order(600), order(400), order(100), order(1)]))).toEqual([
      [100],
      [600],
      [400, 100],
      [1],
    ]);
    const many = slicesOf(Array(200).fill(order(250)));
    expect(many).toHaveLength(100);
    expect(many.flat()).toHaveLength(200);
  });
});
