import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TrainArgs, Trained } from '../fixtures/train-rank.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';
import { STEPS, assertClose, assertTrainsAsReference, referenceRun, trained } from './train-harness.js';

test('one rank trains a small GPT on the whole global batch: the loss falls', async () => {
  const r = await referenceRun();
  const losses = r.losses as number[];
  assert.ok(losses[STEPS - 1] < losses[0] * 0.9, `losses ${losses}`);
});

const modes: [string, number, TrainArgs, boolean?][] = [
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
    assertTrainsAsReference(results, await referenceRun(), { losses: (args.accumulate ?? 1) === 1 });
    for (const [rank, r] of results.entries())
      assert.deepEqual(r.weights, results[0].weights, `rank ${rank} holds rank 0's weights exactly`);
    if (args.bucketCapMb !== undefined) assert.ok(results[0].buckets > 2, `buckets ${results[0].buckets}`);
  });
}

test("data parallel under progress 'auto' trains as one rank does, and issues the loss's all-reduce after the gradient buckets", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-auto-dp-'));
  try {
    const results = await trained(2, { steps: STEPS, progress: 'auto', trace: join(dir, 'trace.json') });
    assertTrainsAsReference(results, await referenceRun());
    for (const [rank, r] of results.entries()) {
      // 'auto' may run the one-float loss inline and the buckets on the engine; calls keep their
      // issue order across the two, so a loss issued first would hold the buckets until backward ends.
      const counts = r.issued.map((call) => call.count);
      const steps = counts.filter((count) => count === 1).length;
      assert.equal(steps, STEPS, `rank ${rank}: ${counts}`);
      for (let i = 0; i < counts.length; i++)
        if (counts[i] === 1)
          assert.ok(i === 0 || counts[i - 1] > 1, `rank ${rank}: the loss follows a bucket: ${counts}`);
      assert.equal(counts[counts.length - 1], 1, `rank ${rank}: ${counts}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('ZeRO on 2 and 4 ranks: gradients reduce-scattered, each rank updating its shard, trains as one rank does with a share of the optimizer state', async () => {
  const ref = await referenceRun();
  for (const ranks of [2, 4]) {
    const results = await trained(ranks, { steps: STEPS, zero: true, bucketCapMb: 0.02 });
    assertTrainsAsReference(results, ref);
    for (const [rank, r] of results.entries()) {
      assert.deepEqual(r.weights, results[0].weights, `rank ${rank} holds rank 0's weights exactly`);
      // Adam's two moments of this rank's blocks only (blocks are padded to split evenly, and the optimizer keeps a step count).
      const share = r.memory.optimizerState / ref.memory.optimizerState;
      assert.ok(
        share > 1 / ranks - 0.01 && share < 1 / ranks + 0.02,
        `${ranks} ranks, rank ${rank}: optimizer state ${share} of one rank's`,
      );
    }
  }
});

test('a checkpoint saved mid-training resumes on the same curve: replicas (rank 0 writes), ZeRO (each rank its share), a pipeline (each stage)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-checkpoint-'));
  try {
    const layouts: [string, TrainArgs][] = [
      ['replicas', { steps: STEPS }],
      ['ZeRO', { steps: STEPS, zero: true }],
      ['pipeline', { steps: STEPS, pipeline: 2, microBatches: 2 }],
    ];
    for (const [name, args] of layouts) {
      const path = join(dir, `${name}.ckpt`);
      const whole = await trained(2, { ...args, checkpoint: { path, saveAt: STEPS / 2 } });
      const files = readdirSync(dir).filter((f) => f.startsWith(`${name}.ckpt`));
      assert.deepEqual(
        files.sort(),
        name === 'replicas'
          ? [`${name}.ckpt`]
          : name === 'ZeRO'
            ? [`${name}.ckpt.rank0`, `${name}.ckpt.rank1`]
            : [`${name}.ckpt.stage0`, `${name}.ckpt.stage1`],
      );
      const resumed = await trained(2, { ...args, checkpoint: { path, resume: true } });
      for (const [rank, r] of resumed.entries()) {
        assert.deepEqual(
          r.losses,
          whole[rank].losses.slice(STEPS / 2),
          `${name}: rank ${rank}'s losses after resuming`,
        );
        assert.deepEqual(r.weights, whole[rank].weights, `${name}: rank ${rank}'s final weights`);
      }
    }
    // A checkpoint of another model is refused with the parameter that differs, on every rank, before training.
    await assert.rejects(
      trained(2, { steps: STEPS, tensor: 2, checkpoint: { path: join(dir, 'replicas.ckpt'), resume: true } }),
      /parameter \d+ is \[/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const processes of [false, true]) {
  test(`a rank that dies mid-training (${processes ? 'process' : 'thread'} ranks): the survivors shrink, take rank 0's state, and go on along the same curve`, async () => {
    const args: TrainArgs = { steps: STEPS, globalBatch: 12, victim: 3, dieBefore: STEPS / 2 };
    const job = processes ? launchFixture('train-rank', 4, args) : runFixture('train-rank', 4, args);
    const results = await rankResults<Trained>(job);
    assert.equal(results[3], undefined, 'the victim returned nothing');
    const [reference] = await trained(1, { steps: STEPS, globalBatch: 12 });
    for (const rank of [0, 1, 2]) {
      const r = results[rank] as Trained;
      assert.equal(r.shrunkTo, 3, `rank ${rank} went on with 3 ranks`);
      assertClose(r.losses as number[], reference.losses as number[], `rank ${rank} losses`);
      assert.deepEqual(r.weights, (results[0] as Trained).weights, `rank ${rank} holds rank 0's weights exactly`);
    }
  });
}

test('compressed gradient buckets (bf16, int8, int8 with error feedback, int4 under ZeRO) train close to fp32, every rank with the same weights', async () => {
  const ref = await referenceRun();
  const cases: [TrainArgs, number][] = [
    [{ steps: STEPS, compression: 'bf16' }, 3e-2],
    [{ steps: STEPS, compression: 'int8' }, 3e-2],
    [{ steps: STEPS, compression: 'int8', errorFeedback: true, bucketCapMb: 0.02 }, 3e-2],
    [{ steps: STEPS, compression: 'int4', errorFeedback: true, zero: true }, 1.5e-1],
  ];
  for (const [args, tolerance] of cases) {
    const label = `${args.compression}${args.errorFeedback ? ' + error feedback' : ''}${args.zero ? ' under ZeRO' : ''}`;
    const results = await trained(2, args);
    for (const [rank, r] of results.entries()) {
      assert.deepEqual(r.weights, results[0].weights, `${label}: rank ${rank} holds rank 0's weights exactly`);
      assertClose(r.losses as number[], ref.losses as number[], `${label} rank ${rank} losses`, tolerance);
    }
    // Compression is not free of error: the losses are not the reference's to the last bit.
    assert.notDeepEqual(results[0].losses, ref.losses, `${label} changed nothing`);
  }
});

test('fp16 and bf16 gradient hooks train close to fp32, every rank with the same weights', async () => {
  const ref = await referenceRun();
  for (const gradientHook of ['fp16', 'bf16'] as const) {
    const results = await trained(2, { steps: STEPS, gradientHook });
    for (const [rank, r] of results.entries()) {
      assert.deepEqual(r.weights, results[0].weights, `${gradientHook}: rank ${rank} holds rank 0's weights exactly`);
      assertClose(
        r.losses as number[],
        ref.losses as number[],
        `${gradientHook} rank ${rank} losses`,
        gradientHook === 'fp16' ? 1e-2 : 3e-2,
      );
    }
  }
});
