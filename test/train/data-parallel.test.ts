import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TrainDpArgs } from '../fixtures/train-dp-rank.js';
import { launchFixture, runFixture } from '../harness/ranks.js';

interface Trained {
  losses: number[];
  buckets: number;
  weights: number[];
}

const STEPS = 8;
/** fp32 reassociation (a mean of per-rank means instead of one mean), carried through Adam over the steps. */
const TOLERANCE = 1e-4;

function assertClose(actual: number[], expected: number[], what: string, tolerance = TOLERANCE): void {
  assert.equal(actual.length, expected.length, what);
  actual.forEach((a, i) => {
    const scale = Math.max(Math.abs(expected[i]), 1e-2);
    assert.ok(Math.abs(a - expected[i]) / scale <= tolerance, `${what}[${i}]: ${a} vs ${expected[i]}`);
  });
}

async function trained(ranks: number, args: TrainDpArgs, processes = false): Promise<Trained[]> {
  const job = processes ? launchFixture('train-dp-rank', ranks, args) : runFixture('train-dp-rank', ranks, args);
  return (await job).results as Trained[];
}

let reference: Trained;
test('one rank trains a small GPT on the whole global batch: the loss falls', async () => {
  [reference] = await trained(1, { steps: STEPS });
  assert.ok(reference.losses[STEPS - 1] < reference.losses[0] * 0.9, `losses ${reference.losses}`);
});

const modes: [string, number, TrainDpArgs, boolean?][] = [
  ['2 thread ranks', 2, { steps: STEPS }],
  [
    '4 thread ranks on progress engines, one bucket per few layers',
    4,
    { steps: STEPS, progress: 'engine', bucketCapMb: 0.02 },
  ],
  ['2 ranks accumulating two micro-batches each before one update', 2, { steps: STEPS, accumulate: 2 }],
  ['2 ranks that start from different weights (rank 0 broadcasts its own)', 2, { steps: STEPS, unequalStart: true }],
  ['2 process ranks over TCP', 2, { steps: STEPS }, true],
];
for (const [name, ranks, args, processes] of modes) {
  test(`data parallel on ${name} trains as one rank does on the same global batch`, async () => {
    const results = await trained(ranks, args, processes);
    for (const [rank, r] of results.entries()) {
      assertClose(r.weights, reference.weights, `rank ${rank} weights`);
      if ((args.accumulate ?? 1) === 1) assertClose(r.losses, reference.losses, `rank ${rank} losses`);
      assert.deepEqual(r.weights, results[0].weights, `rank ${rank} holds rank 0's weights exactly`);
    }
    if (args.bucketCapMb !== undefined) assert.ok(results[0].buckets > 2, `buckets ${results[0].buckets}`);
  });
}

test('fp16 and bf16 gradient hooks train close to fp32, every rank with the same weights', async () => {
  for (const gradientHook of ['fp16', 'bf16'] as const) {
    const results = await trained(2, { steps: STEPS, gradientHook });
    for (const [rank, r] of results.entries()) {
      assert.deepEqual(r.weights, results[0].weights, `${gradientHook}: rank ${rank} holds rank 0's weights exactly`);
      assertClose(
        r.losses,
        reference.losses,
        `${gradientHook} rank ${rank} losses`,
        gradientHook === 'fp16' ? 1e-2 : 3e-2,
      );
    }
  }
});
