import { describe, expect, it } from 'vitest';
import { groupCalls } from '../../src/group-calls.js';

// The grouping itself, over a fake `many` that applies a group as one transaction: all of it or nothing.
function transactional(refuses: (input: string) => boolean) {
  const groups: string[][] = [];
  const applied: string[] = [];
  const many = async (inputs: readonly string[]) => {
    groups.push([...inputs]);
    const bad = inputs.find(refuses);
    if (bad !== undefined) throw new Error(`refused ${bad}`);
    applied.push(...inputs);
    return inputs.map((input) => input.toUpperCase());
  };
  return { many, groups, applied };
}

describe('groupCalls', () => {
  it('answers every other member of a group one poisoned member failed, each applied exactly once', async () => {
    const { many, groups, applied } = transactional((input) => input.includes('\0'));
    const call = groupCalls(many, 10);
    const inputs = ['a', 'b\0', 'c', 'd'];
    const outcomes = await Promise.allSettled(inputs.map(call));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      'A',
      'refused b\0',
      'C',
      'D',
    ]);
    expect(groups).toEqual([inputs, ['a'], ['b\0'], ['c'], ['d']]);
    expect(applied.sort()).toEqual(['a', 'c', 'd']);
  });

  it('fails a member alone with its own error only: another poisoned member does not take its error', async () => {
    const { many } = transactional((input) => input.startsWith('x'));
    const call = groupCalls(many, 10);
    const outcomes = await Promise.allSettled(['x1', 'ok', 'x2'].map(call));
    expect(outcomes).toEqual([
      { status: 'rejected', reason: new Error('refused x1') },
      { status: 'fulfilled', value: 'OK' },
      { status: 'rejected', reason: new Error('refused x2') },
    ]);
  });

  it('fails the whole group with a failure every member would meet alone, retrying none', async () => {
    const down = new Error('store away');
    let calls = 0;
    const call = groupCalls(
      async () => {
        calls++;
        throw down;
      },
      10,
      { failsEveryone: (err) => err === down },
    );
    const outcomes = await Promise.allSettled(['a', 'b', 'c'].map(call));
    expect(outcomes.every((o) => o.status === 'rejected' && o.reason === down)).toBe(true);
    expect(calls).toBe(1);
  });

  it('with retryAlone off, fails every member with the group error and calls nothing again', async () => {
    const { many, groups } = transactional((input) => input === 'bad');
    const call = groupCalls(many, 10, { retryAlone: false });
    const outcomes = await Promise.allSettled(['a', 'bad'].map(call));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(groups).toEqual([['a', 'bad']]);
  });

  it('retries through `alone` when given, and a many that throws at once fails like one that rejects', async () => {
    const alone: string[] = [];
    const call = groupCalls(
      (inputs: readonly string[]) => {
        if (inputs.length > 1) throw new Error('thrown before any promise');
        return Promise.resolve(inputs.map((i) => `many ${i}`));
      },
      10,
      {
        alone: async (input) => {
          alone.push(input);
          return `alone ${input}`;
        },
      },
    );
    await expect(Promise.all(['a', 'b'].map(call))).resolves.toEqual(['alone a', 'alone b']);
    expect(alone).toEqual(['a', 'b']);
    await expect(call('c')).resolves.toBe('many c');
  });
});
