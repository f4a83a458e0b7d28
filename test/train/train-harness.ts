import assert from 'node:assert/strict';
import type { TrainArgs, Trained } from '../fixtures/train-rank.js';
import { launchFixture, runFixture } from '../harness/ranks.js';

// Training runs compared with one rank training on the same global batch.

export const STEPS = 8;
/** fp32 reassociation (a mean of per-rank means instead of one mean, sums split over ranks), carried through Adam over the steps. */
const TOLERANCE = 1e-4;

export function assertClose(
  actual: readonly number[],
  expected: readonly number[],
  what: string,
  tolerance = TOLERANCE,
): void {
  assert.equal(actual.length, expected.length, what);
  actual.forEach((a, i) => {
    const scale = Math.max(Math.abs(expected[i]), 1e-2);
    assert.ok(Math.abs(a - expected[i]) / scale <= tolerance, `${what}[${i}]: ${a} vs ${expected[i]}`);
  });
}

export async function trained(ranks: number, args: TrainArgs, processes = false): Promise<Trained[]> {
  const job = processes ? launchFixture('train-rank', ranks, args) : runFixture('train-rank', ranks, args);
  return (await job).results as Trained[];
}

/** Every rank that knows the loss has the reference's, and every layer a rank trains whole has the reference's weights. */
export function assertTrainsAsReference(
  results: Trained[],
  reference: Trained,
  options: { losses?: boolean } = {},
): void {
  let lossKnown = 0;
  for (const [rank, r] of results.entries()) {
    if (r.losses.every((l) => l !== undefined)) {
      lossKnown++;
      if (options.losses !== false)
        assertClose(r.losses as number[], reference.losses as number[], `rank ${rank} losses`);
    } else
      assert.ok(
        r.losses.every((l) => l === undefined),
        `rank ${rank} knows some losses only`,
      );
    for (const [layer, w] of Object.entries(r.weights))
      assertClose(w, reference.weights[layer], `rank ${rank} ${layer} weights`);
  }
  assert.ok(lossKnown > 0, 'no rank reported the loss');
}

let reference: Promise<Trained> | undefined;
export async function referenceRun(): Promise<Trained> {
  reference ??= trained(1, { steps: STEPS }).then((r) => r[0]);
  return reference;
}
