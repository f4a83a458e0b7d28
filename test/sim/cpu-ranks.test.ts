import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Collective } from '../../src/algorithms/schedule.js';
import { ONE_SHOT } from '../../src/exec/one-shot.js';
import { simulateFlows } from '../../src/sim/flow-sim.js';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

const CALL_US = 10;
const WAKE_US = 100;

/** Thread ranks on `cores` cores whose bytes cost nothing, so only call and wake-up costs remain. */
function cpuRanks(ranks: number, cores: number): TopologyGraph {
  const detection = fakeDetection(cores);
  const base = defaultProfile(cores, 'h');
  const profile = {
    ...base, reduceGBps: 1e9,
    // A 2-rank one-shot call measures its fixed cost and one wake-up.
    shm: { ...base.shm, callUs: CALL_US, messageUs: WAKE_US, oversubscribedMessageUs: WAKE_US, copyGBps: 1e9, oneShotUs: CALL_US + WAKE_US, oneShotGBps: 1e9 },
  };
  return new TopologyGraph(parseTopology(localTopology({ ranks, transport: 'shm', profile, detection }), 'local'));
}

const time = (graph: TopologyGraph, collective: Collective, algorithm: string) =>
  simulateFlows(graph, graph.accelerators, { collective, count: 2, elementBytes: 4, root: 0, algorithm, protocol: 'shm' }).timeUs;

test('a rank is woken only for a message it waited for: a chain of hand-offs costs one wake-up each, messages already there none', () => {
  const graph = cpuRanks(4, 4);
  // The ring: 3 steps, and at each a rank waits for its left neighbour's forward.
  assert.ok(Math.abs(time(graph, 'allGather', 'ring') - (CALL_US + 3 * WAKE_US)) < 1);
  // Direct: all three peers' blocks are posted at once; the rank waits for the first only.
  assert.ok(Math.abs(time(graph, 'allGather', 'direct') - (CALL_US + WAKE_US)) < 1);
});

test('ranks that outnumber the cores queue for them to be woken', () => {
  // 8 ranks each woken for its first block, 2 at a time (4 rounds); the 6 woken before the last
  // round must then wait for the later ranks to read their block, and are woken again (3 rounds).
  assert.ok(Math.abs(time(cpuRanks(8, 2), 'allGather', 'direct') - (CALL_US + 7 * WAKE_US)) < 1);
  assert.ok(Math.abs(time(cpuRanks(8, 8), 'allGather', 'direct') - (CALL_US + WAKE_US)) < 1);
});

test('a call ends when the receivers have taken its sends, as the executor\'s does', () => {
  // The root posts and is done with its own part at once, but its buffer is read in place: it
  // waits for the receiver, which is woken for the message first, then is woken itself.
  for (const cores of [1, 2]) assert.ok(Math.abs(time(cpuRanks(2, cores), 'broadcast', 'direct') - (CALL_US + 2 * WAKE_US)) < 1, `${cores} cores`);
});

test('the one-shot path: one wake-up per rank, and reads that grow with the peers read', () => {
  const graph = cpuRanks(4, 4);
  for (const collective of ['allReduce', 'allGather', 'reduceScatter', 'broadcast'] as const) {
    assert.ok(Math.abs(time(graph, collective, ONE_SHOT) - (CALL_US + WAKE_US)) < 1, collective);
  }
  const detection = fakeDetection(4);
  const slow = new TopologyGraph(parseTopology(localTopology({ ranks: 4, transport: 'shm', profile: { ...defaultProfile(4, 'h'), reduceGBps: 1 }, detection }), 'local'));
  const big = (collective: Collective) => simulateFlows(slow, slow.accelerators, { collective, count: 2 ** 20, elementBytes: 4, root: 0, algorithm: ONE_SHOT, protocol: 'shm' }).timeUs;
  // At 1 GB/s, folding 3 peers' 4 MiB takes ~12.6 ms; a broadcast reads only the root's message.
  assert.ok(big('allReduce') > 12_000, `${big('allReduce')}`);
  assert.ok(big('broadcast') < big('allReduce') / 2, `${big('broadcast')} vs ${big('allReduce')}`);
});

test('over TCP each end spends its overhead on every message: the hand-off and the stream tune measures come back', () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const [overheadUs, messageUs] = [15, 50];
  const profile = { ...base, tcp: { ...base.tcp, callUs: CALL_US, messageUs, gbps: 1e9, overheadUs } };
  const graph = new TopologyGraph(parseTopology(localTopology({ ranks: 2, transport: 'tcp', profile, detection }), 'local'));
  const run = (collective: Collective, algorithm: string, count: number, chunkCount?: number) =>
    simulateFlows(graph, graph.accelerators, { collective, count, elementBytes: 4, root: 0, algorithm, protocol: 'tcp', ...(chunkCount ? { chunkCount } : {}) }).timeUs;
  // One exchange: each end's overhead sending and taking, and the wake-up between: the hand-off
  // (and the TCP stack's switching latency, 2 us).
  const exchange = run('allReduce', 'recursive_doubling', 2);
  assert.ok(exchange >= CALL_US + messageUs && exchange < CALL_US + messageUs + 3, `${exchange}`);
  // A broadcast in 64 pieces: the receiver falls behind the root and takes the rest as they come,
  // so each piece after the first costs one overhead.
  const [whole, pieced] = [run('broadcast', 'binomial_tree', 64), run('broadcast', 'binomial_tree', 64, 1)];
  assert.ok(Math.abs((pieced - whole) / 63 - overheadUs) < 0.1, `${whole} ${pieced}`);
});
