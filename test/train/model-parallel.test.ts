import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TrainArgs } from '../fixtures/train-rank.js';
import { STEPS, assertTrainsAsReference, referenceRun, trained } from './train-harness.js';

const modes: [string, number, TrainArgs][] = [
  ['a 2-stage pipeline, GPipe, 4 micro-batches', 2, { steps: STEPS, pipeline: 2, schedule: 'gpipe', microBatches: 4 }],
  ['a 4-stage pipeline, 1F1B, 4 micro-batches', 4, { steps: STEPS, pipeline: 4, schedule: '1f1b', microBatches: 4 }],
  ['2 tensor-parallel ranks', 2, { steps: STEPS, tensor: 2 }],
  ['2 tensor-parallel ranks on progress engines', 2, { steps: STEPS, tensor: 2, progress: 'engine' }],
  [
    "a 2-stage pipeline of 2 tensor-parallel ranks each, progress 'auto' (short calls inline, long ones on engines)",
    4,
    { steps: STEPS, tensor: 2, pipeline: 2, microBatches: 2, progress: 'auto' },
  ],
  [
    '8 thread ranks in 3D: tensor 2 x pipeline 2 x data 2',
    8,
    { steps: STEPS, tensor: 2, pipeline: 2, microBatches: 2 },
  ],
];
for (const [name, ranks, args] of modes) {
  test(`${name} train as one rank does on the same global batch`, async () => {
    const results = await trained(ranks, args);
    assertTrainsAsReference(results, await referenceRun());
    const stages = args.pipeline ?? 1;
    const lastStage = results.filter((r) => r.coords.pipeline === stages - 1);
    assert.ok(
      lastStage.every((r) => r.losses.every((l) => l !== undefined)),
      'the last stage knows every loss',
    );
    if (stages > 1)
      assert.ok(
        results.filter((r) => r.coords.pipeline < stages - 1).every((r) => r.losses.every((l) => l === undefined)),
      );
    const tensor = args.tensor ?? 1;
    if (tensor > 1) {
      // The vocabulary is split: each rank holds its share of the token table's rows and of the
      // output projection's columns, and tensor rank 0's first numbers were compared above.
      const vocab = results.map((r) => r.shapes.embed?.[0][0] ?? r.shapes.head[2][1]);
      for (const r of results) {
        if (r.shapes.embed !== undefined) assert.equal(r.shapes.embed[0][0], vocab[0], 'token rows');
        if (r.shapes.head !== undefined) assert.equal(r.shapes.head[2][1], vocab[0], 'output columns');
      }
      const reference = await referenceRun();
      assert.equal(vocab[0] * tensor, reference.shapes.embed[0][0], 'a share of the whole vocabulary');
      assert.ok(results.some((r) => 'embed' in r.weights) && results.some((r) => 'head' in r.weights));
    }
  });
}
