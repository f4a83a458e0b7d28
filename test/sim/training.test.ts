import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MODELS, expertSplit, trainingStep } from '../../src/sim/training.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

test('Mixtral 8x7B: 46.7B parameters split into 1.63B shared and 45.1B of experts, 5.63B each', () => {
  const { shared, experts } = expertSplit(MODELS['mixtral-8x7b']);
  assert.ok(Math.abs(shared - 1.633e9) < 1e7, String(shared));
  assert.ok(Math.abs(experts / 8 - 5.633e9) < 1e7, String(experts));
  assert.deepEqual(expertSplit(MODELS['gpt3-175b']), { shared: 175e9, experts: 0 });
});

test('sim train with expert parallelism reduces only the shared parameters over dp, and each expert over the dp / ep ranks holding it', () => {
  const graph = new TopologyGraph(buildPreset('dgx-h100', { nodes: 4 }));
  const layout = {
    tp: 1,
    pp: 1,
    dp: 32,
    ep: 8,
    microBatch: 1,
    globalBatch: 32,
    activationBytes: 2,
    gradientBytes: 2,
    sequenceParallel: false,
  };
  const report = trainingStep(graph, MODELS['mixtral-8x7b'], layout, 'analytical', true);
  const dp = report.collectives.filter((c) => c.group === 'dp');
  assert.deepEqual(
    dp.map((c) => c.groupSize),
    [32, 4],
  );
  const { shared, experts } = expertSplit(MODELS['mixtral-8x7b']);
  assert.equal(dp[0].bytesPerCall, shared * 2);
  assert.equal(dp[1].bytesPerCall, (experts / 8) * 2);
  assert.ok(dp[0].bytesPerCall < 4e9, `${dp[0].bytesPerCall} bytes: the experts are not sharded`);
  assert.deepEqual(report.collectives.find((c) => c.group === 'ep')?.groupSize, 8);
  // Without expert parallelism every rank holds every expert: one all-reduce of the whole model.
  const dense = trainingStep(
    graph,
    MODELS['mixtral-8x7b'],
    { ...layout, ep: 1 },
    'analytical',
    true,
  ).collectives.filter((c) => c.group === 'dp');
  assert.deepEqual(
    dense.map((c) => c.bytesPerCall),
    [46.7e9 * 2],
  );
  assert.throws(
    () => trainingStep(graph, MODELS['mixtral-8x7b'], { ...layout, dp: 32, ep: 16 }, 'analytical', true),
    /must divide the 8 experts/,
  );
});

test('sim train overlaps the data-parallel gradient buckets with the last backward: the step pays only what is left after it', () => {
  const graph = new TopologyGraph(buildPreset('dgx-h100', { nodes: 2 }));
  const layout = {
    tp: 8,
    pp: 1,
    dp: 2,
    ep: 1,
    microBatch: 1,
    globalBatch: 16,
    activationBytes: 2,
    gradientBytes: 2,
    sequenceParallel: false,
  };
  const bucketBytes = 256 * 2 ** 20;
  const report = trainingStep(graph, MODELS['llama-70b'], layout, 'analytical', true, { bucketBytes });
  const step = report.step!;
  assert.equal(step.tflops, 989);
  const gradients = report.collectives.find((c) => c.group === 'dp')!;
  assert.equal(
    step.dpBuckets.reduce((a, b) => a + b.bytes, 0),
    gradients.bytesPerCall,
  );
  // Buckets are reduced one after another, none before it is ready.
  for (const [i, b] of step.dpBuckets.entries()) {
    assert.ok(b.startUs >= b.readyUs, `bucket ${i}`);
    if (i > 0) assert.ok(b.startUs >= step.dpBuckets[i - 1].endUs, `bucket ${i}`);
  }
  const last = step.dpBuckets.at(-1)!;
  assert.equal(step.dpExposedUs, Math.max(0, last.endUs - step.backwardUs));
  assert.ok(step.dpExposedUs >= last.endUs - last.startUs, 'less than the last bucket left after backward');
  assert.ok(step.stepUs < step.serialStepUs, `${step.stepUs} against ${step.serialStepUs} without overlap`);
  // Without overlap the same buckets run after backward, one after another.
  const bucketsUs = step.dpBuckets.reduce((a, b) => a + (b.endUs - b.startUs), 0);
  assert.ok(
    Math.abs(step.serialStepUs - (step.computeUs + step.criticalCommUs + bucketsUs)) < 1e-6 * step.serialStepUs,
  );
  assert.equal(step.stepUs, step.computeUs + step.criticalCommUs + step.dpExposedUs);
  // A lower utilisation stretches compute, and with it the backward that hides the reduction.
  const slow = trainingStep(graph, MODELS['llama-70b'], layout, 'analytical', true, { bucketBytes, mfu: 0.2 }).step!;
  assert.ok(Math.abs(slow.computeUs / step.computeUs - 2) < 1e-9);
  assert.ok(slow.dpExposedUs <= step.dpExposedUs);
});

test('sim train without an accelerator peak says compute is not modelled rather than guessing', () => {
  const graph = new TopologyGraph(buildPreset('pcie-server'));
  const layout = {
    tp: 1,
    pp: 1,
    dp: graph.accelerators.length,
    ep: 1,
    microBatch: 1,
    globalBatch: graph.accelerators.length,
    activationBytes: 2,
    gradientBytes: 2,
    sequenceParallel: false,
  };
  assert.equal(trainingStep(graph, MODELS['llama-70b'], layout, 'analytical', true).step, undefined);
});
