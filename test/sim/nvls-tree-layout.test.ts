import assert from 'node:assert/strict';
import { test } from 'node:test';
import { simulateFlows } from '../../src/sim/flow-sim.js';
import { NvlsTreeLayout } from '../../src/sim/nvls-tree-layout.js';
import { loadTopology } from '../../src/topology/load-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

const graphOf = (preset: string, options: Parameters<typeof loadTopology>[1]) =>
  new TopologyGraph(loadTopology(preset, options));

test("NCCL's NVLS tree: a head per NIC, up to 32, in a double binary tree as deep as NCCL's", () => {
  // Depths 1, 2, 3, 5, 9, 10 on 2-1024 servers: the hops of NCCL's tree (src/graph/trees.cc).
  for (const [nodes, depth] of [
    [2, 1],
    [4, 2],
    [8, 3],
    [32, 5],
    [512, 9],
    [1024, 10],
  ]) {
    const graph = graphOf('dgx-h100', { nodes });
    const layout = NvlsTreeLayout.of(graph, graph.accelerators);
    assert.ok(layout !== undefined, `${nodes} servers`);
    assert.equal(layout.depth, depth, `${nodes} servers`);
    assert.equal(layout.heads, 8);
    assert.equal(layout.channels, 16);
    // A head's NIC serves one tree neighbour per tree on two servers, an inner server's three
    // and a leaf's one from four on: one share, then two shares each way.
    assert.equal(layout.busiestNeighbours, nodes === 2 ? 2 : 4, `${nodes} servers`);
  }
  // 72 GPUs, each with its NIC: NCCL_MAX_NVLS_ARITY caps the heads at 32; Blackwell runs 32 channels across racks.
  const racks = graphOf('gb200-nvl72', { nodes: 2 });
  const gb200 = NvlsTreeLayout.of(racks, racks.accelerators)!;
  assert.equal(gb200.heads, 32);
  assert.equal(gb200.channels, 32);
  // No in-switch reduction, one server, or servers of unequal size: no NVLS tree.
  const a100 = graphOf('dgx-a100', { nodes: 2 });
  assert.equal(NvlsTreeLayout.of(a100, a100.accelerators), undefined);
  const one = graphOf('dgx-h100', { nodes: 1 });
  assert.equal(NvlsTreeLayout.of(one, one.accelerators), undefined);
  const two = graphOf('dgx-h100', { nodes: 2 });
  assert.equal(NvlsTreeLayout.of(two, two.accelerators.slice(0, 12)), undefined);
  // Two GPUs a server are too few for NCCL to set NVLS up.
  const pairs = [0, 1, 8, 9].map((i) => two.accelerators[i]);
  assert.equal(NvlsTreeLayout.of(two, pairs), undefined);
  assert.ok(NvlsTreeLayout.of(two, [...pairs, two.accelerators[2], two.accelerators[10]]) !== undefined);
});

test("the tree's chunk is NCCL's: 128 KiB, 64 KiB from four servers on, smaller for small calls", () => {
  const layoutOf = (nodes: number) => {
    const graph = graphOf('dgx-h100', { nodes });
    return NvlsTreeLayout.of(graph, graph.accelerators)!;
  };
  // 16 channels x 8 heads = 128 operations (src/enqueue.cc, NVLS_TREE).
  assert.equal(layoutOf(2).chunkBytes(2 ** 30), 128 * 1024);
  assert.equal(layoutOf(4).chunkBytes(2 ** 30), 64 * 1024);
  assert.equal(layoutOf(2).chunkBytes(32 * 2 ** 20), 64 * 1024);
  assert.equal(layoutOf(4).chunkBytes(4 * 2 ** 20), 32 * 1024);
  // The fill grows with the depth: more hops, each with the chunks that meet on a NIC.
  const fill = (nodes: number) => layoutOf(nodes).fillUs(2 ** 26, 20, 47_500);
  assert.ok(fill(2) < fill(4) && fill(4) < fill(32) && fill(32) < fill(512), [2, 4, 32, 512].map(fill).join(' '));
});

test('each head NIC carries 1/heads of the data each way on two servers and twice that from four on', () => {
  const bytes = 2 ** 30;
  for (const nodes of [2, 4, 8]) {
    const graph = graphOf('dgx-h100', { nodes });
    const outcome = simulateFlows(graph, graph.accelerators, {
      collective: 'allReduce',
      count: bytes / 4,
      elementBytes: 4,
      root: 0,
      algorithm: 'nvls_tree',
      protocol: 'Simple',
    });
    let busiest = 0;
    for (let l = 0; l < graph.capacities.length; l++) {
      const link = graph.link(l);
      if (graph.devices[link.from].kind === 'nic' && link.family === 'network')
        busiest = Math.max(busiest, outcome.linkBytes[l]);
    }
    assert.equal(busiest, nodes === 2 ? bytes / 8 : (2 * bytes) / 8, `${nodes} servers`);
  }
});
