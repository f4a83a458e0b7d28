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
    /Algorithm 'ring' is not available for broadcast: expected one of binomial_tree, direct, hierarchical, one_shot/);
});

test('TSCCL_ALGO overrides parse NCCL-style and reject unknown names clearly', () => {
  const o = parseAlgorithmOverrides('allreduce:ring; all_gather:ring');
  assert.equal(o.get('allReduce'), 'ring');
  assert.equal(o.get('allGather'), 'ring');
  assert.throws(() => parseAlgorithmOverrides('allreduce:tree'), /TSCCL_ALGO names 'tree' for allReduce: expected one of ring, recursive_doubling, direct, hierarchical, one_shot/);
  assert.throws(() => parseAlgorithmOverrides('ring'), /must be <collective>:<algorithm>/);
});

test('small calls between thread ranks take the one-shot low-latency path; forced schedules and large calls do not', () => {
  // An all-reduce publishes its input and reads every peer's.
  const slots = (nranks: number, bytes: number) => ({ bytes, readBytes: (nranks - 1) * bytes, capacity: 65536 });
  const pick = (nranks: number, bytes: number, algorithm?: string) =>
    selectAlgorithm({ collective: 'allReduce', nranks, bytes, elementBytes: 4, oneShot: slots(nranks, bytes), ...(algorithm ? { algorithm } : {}) });
  assert.deepEqual([pick(2, 8).algorithm, pick(2, 8).protocol], ['one_shot', 'll']);
  assert.equal(pick(2, 64 << 10).protocol, 'simple'); // 2 ranks: the zero-copy exchange wins past 8 KiB
  assert.equal(pick(4, 32 << 10).protocol, 'll');
  assert.equal(pick(8, 32 << 10).protocol, 'simple'); // 224 KiB to read from 7 peers: the schedule splits that work
  assert.equal(pick(8, 16 << 10).protocol, 'll');
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 2, bytes: 8, elementBytes: 4, oneShot: { bytes: (64 << 10) + 4, readBytes: 8, capacity: 65536 } }).protocol, 'simple'); // does not fit a slot
  assert.equal(pick(4, 8, 'ring').protocol, 'simple');
  assert.equal(pick(2, 32 << 10, 'one_shot').protocol, 'll');
  // Without slots (TCP), never; forcing it then says why.
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4 }).protocol, 'simple');
  assert.throws(() => selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4, algorithm: 'one_shot' }),
    /'one_shot' needs thread ranks over shared memory/);
  assert.throws(() => pick(4, 1 << 20, 'one_shot'), /at most 65536 bytes; this allReduce has 1048576/);
  assert.equal(parseAlgorithmOverrides('allreduce:one_shot').get('allReduce'), 'one_shot');
});

test('thread ranks read their peers directly for all-gather and broadcast, and take whole pieces when they outnumber the cores', () => {
  const pick = (collective: 'allGather' | 'broadcast', transport: 'shm' | 'tcp') => selectAlgorithm({ collective, nranks: 4, bytes: 8 << 20, elementBytes: 4, transport }).algorithm;
  assert.equal(pick('allGather', 'shm'), 'direct');
  assert.equal(pick('broadcast', 'shm'), 'direct');
  // Over a network the sender's link would carry n-1 copies; on one host loopback is not that bottleneck.
  const overNetwork = (collective: 'allGather' | 'broadcast', bytes: number, hostCount: number) =>
    selectAlgorithm({ collective, nranks: 4, bytes, elementBytes: 4, transport: 'tcp', hostCount }).algorithm;
  assert.equal(overNetwork('allGather', 8 << 20, 4), 'ring');
  assert.equal(overNetwork('broadcast', 8 << 20, 4), 'binomial_tree');
  assert.equal(overNetwork('allGather', 64, 1), 'direct');
  assert.equal(overNetwork('broadcast', 8 << 20, 1), 'direct');
  assert.equal(overNetwork('broadcast', 64 << 10, 1), 'binomial_tree');
  const twoProcesses = (bytes: number) => selectAlgorithm({ collective: 'allReduce', nranks: 2, bytes, elementBytes: 4, transport: 'tcp' }).algorithm;
  assert.equal(twoProcesses(8 << 20), 'recursive_doubling');
  assert.equal(twoProcesses(16 << 20), 'direct');
  const chunk = (oversubscribed: boolean) => selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 64 << 20, elementBytes: 4, transport: 'shm', oversubscribed }).chunkCount;
  assert.ok(chunk(true) > chunk(false), `oversubscribed pieces ${chunk(true)} should exceed ${chunk(false)}`);
});
