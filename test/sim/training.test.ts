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
