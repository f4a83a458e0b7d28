import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ncclGraphs } from '../../src/sim/nccl-graphs.js';
import { ncclAllReduceCost, ncclChoice } from '../../src/sim/nccl-tuner.js';
import { type SimRequest, simulateRow } from '../../src/sim/simulate.js';
import { loadTopology } from '../../src/topology/load-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { runTsccl } from '../harness/cli.js';

const graphOf = (preset: string, options: Parameters<typeof loadTopology>[1]) =>
  new TopologyGraph(loadTopology(preset, options));

const CANDIDATES = [
  ...['LL', 'LL128', 'Simple'].flatMap((protocol) => [
    { algorithm: 'ring', protocol },
    { algorithm: 'tree', protocol },
  ]),
  { algorithm: 'nvls_tree', protocol: 'Simple' },
];

test("NCCL's search on DGX H100 and GB200 NVL72, as its tuner reads it", () => {
  const h100 = graphOf('dgx-h100', { nodes: 4 });
  // A channel per NDR NIC at 48 GB/s; 8 NVLS heads at 40 inside (9 x 40 fits 18 x 20.6) and 48 across.
  assert.deepEqual(ncclGraphs(h100, h100.accelerators, true), {
    generation: 'hopper',
    ranks: 32,
    nodes: 4,
    channels: 8,
    bw: 48,
    nvls: { heads: 8, bwIntra: 40, bwInter: 48 },
  });
  // GB200: 16 channels at 45.1 move the most within a GPU's 18 x 40.1 GB/s (NCCL 2.27.3 notes:
  // "Increase to 16 the number of NICs used to communicate between MNNVL domains"); 32 heads at 20 / 40.
  const racks = graphOf('gb200-nvl72', { nodes: 2 });
  const gb200 = ncclGraphs(racks, racks.accelerators, true)!;
  assert.deepEqual([gb200.generation, gb200.channels, gb200.bw], ['blackwell', 16, 45.1]);
  assert.deepEqual(gb200.nvls, { heads: 32, bwIntra: 20, bwInter: 40 });
  // AWS p5 on two nodes, where aws-ofi-nccl's tuner hands the call back to NCCL's: a channel per
  // GPU's bundle of four 100 Gb/s EFA, at 48 GB/s.
  const p5 = graphOf('dgx-h100', { nodes: 2, nicsPerNode: 32, nicGbps: 100, nicKind: 'efa' });
  assert.deepEqual(ncclGraphs(p5, p5.accelerators, true), {
    generation: 'hopper',
    ranks: 16,
    nodes: 2,
    channels: 8,
    bw: 48,
    nvls: { heads: 8, bwIntra: 40, bwInter: 48 },
  });
  // AWS p4de (8 A100, four EFA a node): no tuner of AWS's the simulator knows there, and NCCL's
  // model is not replayed; the simulator keeps its own choice.
  const p4de = graphOf('dgx-a100', { nodes: 2, nicsPerNode: 4, nicGbps: 100, nicKind: 'efa' });
  assert.equal(ncclGraphs(p4de, p4de.accelerators, true), undefined);
  // DGX A100: no NVLS; a ring channel per HDR NIC at 24 GB/s, Ampere's search speed under 25.
  const a100 = graphOf('dgx-a100', { nodes: 4 });
  assert.deepEqual(ncclGraphs(a100, a100.accelerators, true), {
    generation: 'ampere',
    ranks: 32,
    nodes: 4,
    channels: 8,
    bw: 24,
  });
  // One server, or servers whose GPUs share no NVSwitch: not NCCL's cost model's case here.
  const one = graphOf('dgx-a100', { nodes: 1 });
  assert.equal(ncclGraphs(one, one.accelerators, true), undefined);
});

test("NCCL's cost model on 4 DGX H100: its latencies and bandwidths, and what it picks", () => {
  const h100 = graphOf('dgx-h100', { nodes: 4 });
  const graphs = ncclGraphs(h100, h100.accelerators, true)!;
  const cost = (algorithm: 'ring' | 'tree' | 'nvls_tree') => ncclAllReduceCost(graphs, algorithm, 'Simple')!;
  // Ring: 8.4 + 56 x max(3.4, 3 x 1.0) + 6 x 14; tree: 8.4 + 2 x (7 x 4 + 2 x 14); NVLS tree: 25 + 2 x 2 x 14.
  assert.ok(Math.abs(cost('ring').latencyUs - 282.8) < 1e-9, String(cost('ring').latencyUs));
  assert.ok(Math.abs(cost('tree').latencyUs - 120.4) < 1e-9);
  assert.ok(Math.abs(cost('nvls_tree').latencyUs - 81) < 1e-9);
  assert.ok(Math.abs(cost('ring').bw - (8 * 48 * 32) / 62) < 1e-9);
  assert.ok(Math.abs(cost('tree').bw - 144) < 1e-9);
  assert.ok(Math.abs(cost('nvls_tree').bw - 160) < 1e-9);
  const pick = (bytes: number) => ncclChoice(graphs, CANDIDATES, bytes);
  assert.deepEqual(pick(8), { algorithm: 'tree', protocol: 'LL' });
  assert.deepEqual(pick(64 * 2 ** 20), { algorithm: 'nvls_tree', protocol: 'Simple' });
  assert.deepEqual(pick(2 ** 30), { algorithm: 'ring', protocol: 'Simple' });
  // From 32 servers on the ring's latency keeps NCCL on its NVLS tree at 1 GiB.
  const wide = graphOf('dgx-h100', { nodes: 32 });
  assert.deepEqual(ncclChoice(ncclGraphs(wide, wide.accelerators, true)!, CANDIDATES, 2 ** 30), {
    algorithm: 'nvls_tree',
    protocol: 'Simple',
  });
  // What it cannot run it does not pick: without the Simple protocol, no NVLS tree.
  assert.notEqual(ncclChoice(graphs, CANDIDATES.slice(0, 4), 64 * 2 ** 20)?.algorithm, 'nvls_tree');
});

test("left to choose, the simulator runs NCCL's pick across NVSwitch servers, and its own elsewhere", () => {
  const row = (
    preset: string,
    topology: Parameters<typeof loadTopology>[1],
    bytes: number,
    request: Partial<SimRequest> = {},
  ) => {
    const graph = graphOf(preset, topology);
    return simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes,
      mode: 'analytical',
      nvls: true,
      elementBytes: 4,
      root: 0,
      ...request,
    });
  };
  // 32 DGX H100 at 64 MiB: NCCL's NVLS tree, though the simulator prices its own tree faster there.
  const picked = row('dgx-h100', { nodes: 32 }, 64 * 2 ** 20);
  assert.equal(picked.algorithm, 'nvls_tree');
  assert.ok(row('dgx-h100', { nodes: 32 }, 64 * 2 ** 20, { algorithm: 'tree' }).timeUs < picked.timeUs);
  // Two GB200 racks, 16 GiB: the NVLS tree (810 GB/s published), where its ring would reach 714.
  assert.equal(row('gb200-nvl72', { nodes: 2 }, 16 * 2 ** 30).algorithm, 'nvls_tree');
  // Without the Simple protocol NCCL picks among the others by the same model (its tree's LL128 at
  // 64 MiB on 32 servers, as NCCL_PROTO=LL,LL128 would have it).
  const noSimple = row('dgx-h100', { nodes: 32 }, 64 * 2 ** 20, { protocols: ['LL', 'LL128'] });
  assert.deepEqual([noSimple.algorithm, noSimple.protocol], ['tree', 'LL128']);
  // Without in-switch reduction NCCL's model still picks: at 1 GiB on two servers the ring, though
  // the simulator prices its own tree faster (NCCL rates a tree channel at most 41.4 GB/s, halved).
  const withoutNvls = row('dgx-h100', { nodes: 2 }, 2 ** 30, { nvls: false });
  assert.equal(withoutNvls.algorithm, 'ring');
  assert.ok(row('dgx-h100', { nodes: 2 }, 2 ** 30, { nvls: false, algorithm: 'tree' }).timeUs < withoutNvls.timeUs);
  // Two DGX A100: the ring too, as NVIDIA's 192 GB/s (NVIDIA/nccl issue 812) and OCI's 189.6 on
  // 16 x 100 Gb/s (oracle-quickstart/oci-hpc-oke) measure; the simulator's own tree gives 250.
  assert.equal(row('dgx-a100', { nodes: 2 }, 8 * 2 ** 30).algorithm, 'ring');
  // AWS p5 on two nodes: NCCL's pick (AWS's tuner hands two nodes back), the ring, though the
  // simulator prices its own tree faster.
  const p5 = (nodes: number) => ({ nodes, nicsPerNode: 32, nicGbps: 100, nicKind: 'efa' }) as const;
  assert.equal(row('dgx-h100', p5(2), 2 ** 30, { nvls: false }).algorithm, 'ring');
  assert.ok(
    row('dgx-h100', p5(2), 2 ** 30, { nvls: false, algorithm: 'tree' }).timeUs <
      row('dgx-h100', p5(2), 2 ** 30, { nvls: false }).timeUs,
  );
  // On more nodes AWS's regions pick, and nccl-tests on p5 step where they do (docs/SIMULATOR.md):
  // 4 nodes, ring LL128 to 1 GiB and ring Simple from 2 GiB (280.3 then 347.6 GB/s published).
  const pick = (nodes: number, bytes: number, request: Partial<SimRequest> = {}) => {
    const r = row('dgx-h100', p5(nodes), bytes, request);
    return `${r.algorithm} ${r.protocol}`;
  };
  assert.equal(pick(4, 32 * 2 ** 20), 'tree LL128');
  assert.equal(pick(4, 2 ** 30), 'ring LL128');
  assert.equal(pick(4, 2 * 2 ** 30), 'ring Simple');
  // 16 nodes: ring LL128 at 2 GiB (a vertex of its region), the NVLS tree at 4 GiB, the ring's
  // Simple at 8 GiB (270.9, 306.2, 356.3 published); 32 nodes, the NVLS tree at 8 GiB (321.1).
  assert.equal(pick(16, 2 * 2 ** 30), 'ring LL128');
  assert.equal(pick(16, 4 * 2 ** 30), 'nvls_tree Simple');
  assert.equal(pick(16, 8 * 2 ** 30), 'ring Simple');
  assert.equal(pick(32, 8 * 2 ** 30), 'nvls_tree Simple');
  // A region whose algorithm or protocol is not offered is passed over, as AWS's tuner passes over
  // what NCCL cannot run: without NVLS or without LL128 the next region, or NCCL's pick, runs.
  assert.equal(pick(32, 8 * 2 ** 30, { nvls: false }), 'ring Simple');
  assert.equal(pick(4, 2 ** 30, { protocols: ['LL', 'Simple'] }), 'ring Simple');
});

test("tsccl sim says when a row runs NCCL's cost model's pick, and when it chooses by its own prediction", async () => {
  const header = async (...args: string[]) => {
    const run = await runTsccl(['sim', '--topo', 'dgx-h100', '-b', '64M', '-e', '64M', ...args]);
    assert.equal(run.code, 0, run.stderr);
    return run.stdout.split('\n')[1];
  };
  assert.match(await header('--nodes', '8'), /running what NCCL's own cost model picks/);
  assert.match(await header('--nodes', '8', '--nvls', 'off'), /running what NCCL's own cost model picks/);
  assert.match(await header('--nodes', '1'), /choosing among the algorithms NCCL runs/);
  assert.match(await header('--nodes', '8', '--algo', 'ring'), /running --algo ring/);
  const efa = ['--nics-per-node', '32', '--nic-gbps', '100', '--nic-kind', 'efa'];
  assert.match(await header('--nodes', '4', ...efa), /running what AWS's tuner picks on P5/);
  assert.match(await header('--nodes', '2', ...efa), /running what NCCL's own cost model picks/);
  const run = await runTsccl([
    'sim',
    '--topo',
    'hgx-h200',
    '--nodes',
    '4',
    '--nics-per-node',
    '16',
    '--nic-gbps',
    '200',
    '--nic-kind',
    'efa',
    '-b',
    '4G',
    '-e',
    '4G',
  ]);
  assert.match(run.stdout.split('\n')[1], /running what AWS's tuner picks on P5/);
});
