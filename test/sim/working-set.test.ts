import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallShape } from '../../src/algorithms/schedule.js';
import { callRates } from '../../src/sim/working-set.js';
import { simulateRow } from '../../src/sim/simulate.js';
import { tscclChooser } from '../../src/tuner/sim-chooser.js';
import { loadTopology } from '../../src/topology/load-topology.js';
import { PROFILE_WORKING_SET, defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

const detection = fakeDetection(2);
const MIB = 2 ** 20;
const allReduce = (nranks: number, bytes: number): CallShape => ({
  collective: 'allReduce',
  nranks,
  count: bytes / 4,
  root: 0,
  inPlace: false,
  chunkCount: 0,
});

function local(ranks: number, tiers = true): TopologyGraph {
  const profile = defaultProfile(2, 'h');
  const { memoryTiers: _dropped, ...untiered } = profile;
  return new TopologyGraph(
    parseTopology(localTopology({ ranks, transport: 'shm', profile: tiers ? profile : untiered, detection }), 'local'),
  );
}

test('a GPU topology keeps its stated rates: no cache tiers, the same capacities', () => {
  const graph = new TopologyGraph(loadTopology('dgx-h100'));
  const rates = callRates(graph, graph.accelerators, allReduce(8, 1 << 30), 4);
  assert.equal(rates.capacities, graph.capacities);
  assert.ok(rates.deviceScale.every((s) => s === 1));
});

test('on CPU ranks the working set of the call sets the memory speed: faster in cache, slower past it', () => {
  const graph = local(4);
  const scaleAt = (bytes: number) =>
    callRates(graph, graph.accelerators, allReduce(4, bytes), 4).deviceScale[graph.accelerators[0]];
  // 4 ranks x (input + output): 8 MiB per rank is the profile's own working set.
  assert.ok(Math.abs(scaleAt(PROFILE_WORKING_SET / 8) - 1) < 1e-9);
  assert.ok(scaleAt(64 * 1024) > 2, `${scaleAt(64 * 1024)}`);
  assert.ok(scaleAt(64 * MIB) < 0.6, `${scaleAt(64 * MIB)}`);
  const small = callRates(graph, graph.accelerators, allReduce(4, 64 * 1024), 4);
  const memoryLinks = Array.from({ length: graph.linkCount }, (_, i) => graph.link(i)).filter(
    (l) => l.family === 'memory',
  );
  assert.ok(
    memoryLinks.length > 0 && memoryLinks.every((l) => small.capacities[l.index] > 2 * graph.capacities[l.index]),
  );
});

test('a large all-reduce of 4 thread ranks is predicted slower past the cache than with one memory speed', () => {
  const time = (graph: TopologyGraph) =>
    simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes: 64 * MIB,
      algorithm: 'direct',
      mode: 'flow',
      nvls: false,
      elementBytes: 4,
      root: 0,
      chooser: tscclChooser,
    }).timeUs;
  assert.ok(time(local(4)) > 1.5 * time(local(4, false)), `${time(local(4))} vs ${time(local(4, false))}`);
});

test("ranks that copy at once share what all cores move together; each rank's own link keeps one core's speed", () => {
  const profile = defaultProfile(2, 'h');
  const halved = { ...profile, memoryTiers: profile.memoryTiers!.map((t) => ({ ...t, allCoresGBps: t.copyGBps / 2 })) };
  const graphOf = (p: typeof profile) =>
    new TopologyGraph(parseTopology(localTopology({ ranks: 2, transport: 'shm', profile: p, detection }), 'local'));
  const [plain, shared] = [graphOf(profile), graphOf(halved)];
  const shape = allReduce(2, 16 * MIB);
  const [before, after] = [
    callRates(plain, plain.accelerators, shape, 4),
    callRates(shared, shared.accelerators, shape, 4),
  ];
  const links = Array.from({ length: shared.linkCount }, (_, i) => shared.link(i));
  const forwarding = links.filter((l) => l.family === 'host' && l.from === l.to);
  const memory = links.filter((l) => l.family === 'memory');
  assert.ok(forwarding.length === 1 && memory.length > 0);
  assert.ok(Math.abs(after.capacities[forwarding[0].index] / before.capacities[forwarding[0].index] - 0.5) < 1e-9);
  assert.ok(memory.every((l) => after.capacities[l.index] === before.capacities[l.index]));
  // Both ranks pull the other's half at once: the hub caps them at what the cores copy together.
  const time = (graph: TopologyGraph) =>
    simulateRow(graph, graph.accelerators, {
      op: 'all_gather',
      bytes: 16 * MIB,
      algorithm: 'direct',
      mode: 'flow',
      nvls: false,
      elementBytes: 4,
      root: 0,
      chooser: tscclChooser,
    }).timeUs;
  assert.ok(time(shared) > 1.5 * time(plain), `${time(shared)} vs ${time(plain)}`);
});

test('process ranks move a message that fits the socket buffers at its measured rate, a large one at gbps', () => {
  const base = defaultProfile(2, 'h');
  const tiered = { ...base, tcp: { ...base.tcp, sizeTiers: [{ bytes: 256 * 1024, gbps: 3 * base.tcp.gbps }] } };
  const { sizeTiers: _dropped, ...untieredTcp } = tiered.tcp;
  const graphOf = (profile: typeof base) =>
    new TopologyGraph(parseTopology(localTopology({ ranks: 2, transport: 'tcp', profile, detection }), 'local'));
  const [plain, fast] = [graphOf({ ...base, tcp: untieredTcp }), graphOf(tiered)];
  const loopback = (graph: TopologyGraph) =>
    Array.from({ length: graph.linkCount }, (_, i) => graph.link(i)).filter((l) => l.family !== 'memory');
  // A 2-rank all-reduce of 256 KiB touches what a sendrecv of 256 KiB each way does: 4 x 256 KiB.
  const small = callRates(fast, fast.accelerators, allReduce(2, 256 * 1024), 4);
  assert.ok(
    loopback(fast).length > 0 &&
      loopback(fast).every((l) => Math.abs(small.capacities[l.index] / fast.capacities[l.index] - 3) < 1e-9),
  );
  // At the sendrecv of gbps (16 MiB each way) and past it, the stated rates.
  const large = callRates(fast, fast.accelerators, allReduce(2, 64 * MIB), 4);
  assert.ok(loopback(fast).every((l) => large.capacities[l.index] === fast.capacities[l.index]));
  assert.ok(
    fast.accelerators.every((d) => small.deviceScale[d] === 1),
    'reductions keep the kernel speed',
  );
  const time = (graph: TopologyGraph) =>
    simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes: 256 * 1024,
      algorithm: 'recursive_doubling',
      mode: 'flow',
      nvls: false,
      elementBytes: 4,
      root: 0,
      chooser: tscclChooser,
    }).timeUs;
  assert.ok(time(fast) < 0.7 * time(plain), `${time(fast)} vs ${time(plain)}`);
  // Processes that outnumber the cores each still move a small message faster, but together the
  // stack's forwarding (its link to itself) keeps one speed at every size.
  const crowded = new TopologyGraph(
    parseTopology(localTopology({ ranks: 4, transport: 'tcp', profile: tiered, detection }), 'local'),
  );
  const crowdedRates = callRates(crowded, crowded.accelerators, allReduce(4, 64 * 1024), 4);
  const crowdedLinks = Array.from({ length: crowded.linkCount }, (_, i) => crowded.link(i));
  const stackLinks = crowdedLinks.filter((l) => l.from === l.to && crowded.devices[l.from].id === 'tcp-stack');
  const endLinks = crowdedLinks.filter((l) => l.from !== l.to && l.family !== 'memory');
  assert.ok(
    stackLinks.length === 1 &&
      stackLinks.every((l) => crowdedRates.capacities[l.index] === crowded.capacities[l.index]),
  );
  assert.ok(
    endLinks.length > 0 &&
      endLinks.every((l) => Math.abs(crowdedRates.capacities[l.index] / crowded.capacities[l.index] - 3) < 1e-9),
  );
});
