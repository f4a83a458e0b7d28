import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { predictOn } from '../../src/tuner/predict.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

interface P {
  algorithm: string;
  timeUs: number;
  chunkCount: number;
  profile: string;
}

test('comm.predict names the algorithm the tuner runs (the one-shot path too) and a time that grows with the size', async () => {
  // The choices below are the default profile's: a profile `tsccl tune` saved on this machine must not change them.
  process.env.TSCCL_PROFILE = join(tmpdir(), `tsccl-no-profile-${process.pid}.json`);
  const { results } = await runFixture('predict-rank', 3).finally(() => {
    delete process.env.TSCCL_PROFILE;
  });
  for (const res of results as {
    small: P;
    large: P;
    forced: P;
    ran: string;
    badCollective: string;
    badBytes: string;
    badAlgorithm: string;
  }[]) {
    assert.equal(res.small.algorithm, 'one_shot');
    assert.equal(res.ran, res.small.algorithm);
    assert.equal(res.large.algorithm, 'direct');
    assert.equal(res.forced.algorithm, 'ring');
    assert.ok(res.small.timeUs > 0 && res.large.timeUs > res.small.timeUs, `${res.small.timeUs} ${res.large.timeUs}`);
    assert.deepEqual(
      [res.badCollective, res.badBytes, res.badAlgorithm],
      ['TSCCL_ERR_INVALID_ARGUMENT', 'TSCCL_ERR_INVALID_ARGUMENT', 'TSCCL_ERR_INVALID_ARGUMENT'],
    );
  }
});

test('predictOn counts a reduce-scatter by its per-rank block: it moves what the matching all-gather moves', () => {
  const detection = fakeDetection(4);
  const profile = { ...defaultProfile(4, 'h'), reduceGBps: 1000 };
  const graph = new TopologyGraph(
    parseTopology(localTopology({ ranks: 4, transport: 'shm', profile, detection }), 'local'),
  );
  const input = 64 * 2 ** 20;
  const scatter = predictOn(graph, { collective: 'reduceScatter', bytes: input, elementBytes: 4, hostCount: 1 });
  const gather = predictOn(graph, { collective: 'allGather', bytes: input / 4, elementBytes: 4, hostCount: 1 });
  assert.equal(scatter.algorithm, 'ring');
  // The all-gather also copies each rank's own block, before its reads (thread ranks pull), which
  // the reduce-scatter folds into its first step; read as whole inputs, the scatter would be 4x.
  assert.ok(Math.abs(scatter.timeUs - gather.timeUs) / gather.timeUs < 0.3, `${scatter.timeUs} vs ${gather.timeUs}`);
});
