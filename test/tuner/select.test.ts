import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAlgorithmOverrides, selectAlgorithm } from '../../src/tuner/select.js';

test('the tuner picks latency-optimal all-reduce for small messages, direct shared memory for large', () => {
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4 }).algorithm, 'recursive_doubling');
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 64 << 20, elementBytes: 4 }).algorithm, 'direct');
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 2, bytes: 64 << 20, elementBytes: 4 }).algorithm, 'recursive_doubling');
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4, algorithm: 'ring' }).algorithm, 'ring');
  // Several ranks on each of several hosts: one stream per host crosses the network.
  assert.equal(selectAlgorithm({ collective: 'allGather', nranks: 8, bytes: 8, elementBytes: 4, hostCount: 2 }).algorithm, 'hierarchical');
  assert.equal(selectAlgorithm({ collective: 'allGather', nranks: 4, bytes: 8, elementBytes: 4, hostCount: 4 }).algorithm, 'ring');
  assert.equal(selectAlgorithm({ collective: 'allToAll', nranks: 8, bytes: 8, elementBytes: 4, hostCount: 2 }).algorithm, 'pairwise');
  assert.throws(() => selectAlgorithm({ collective: 'broadcast', nranks: 4, bytes: 8, elementBytes: 4, algorithm: 'ring' }),
    /Algorithm 'ring' is not available for broadcast: expected one of binomial_tree, hierarchical/);
});

test('TSCCL_ALGO overrides parse NCCL-style and reject unknown names clearly', () => {
  const o = parseAlgorithmOverrides('allreduce:ring; all_gather:ring');
  assert.equal(o.get('allReduce'), 'ring');
  assert.equal(o.get('allGather'), 'ring');
  assert.throws(() => parseAlgorithmOverrides('allreduce:tree'), /TSCCL_ALGO names 'tree' for allReduce: expected one of ring, recursive_doubling, direct, hierarchical/);
  assert.throws(() => parseAlgorithmOverrides('ring'), /must be <collective>:<algorithm>/);
});
