import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { LINK_KINDS } from '../../src/topology/catalog.js';
import { loadTopology } from '../../src/topology/load-topology.js';
import { PRESETS, PRESET_NAMES, type PresetOptions, buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology, topologyJsonSchema } from '../../src/topology/topology-schema.js';

/** The links of the route between accelerators a and b (by rank index), by name and by kind. */
const routeLinks = (g: TopologyGraph, a: number, b: number) =>
  Array.from(g.route(g.accelerators[a], g.accelerators[b]));
const routeNames = (g: TopologyGraph, a: number, b: number) => routeLinks(g, a, b).map((l) => g.linkName(l));
const routeKinds = (g: TopologyGraph, a: number, b: number) => routeLinks(g, a, b).map((l) => g.link(l).kind);

test('every catalog entry names its source and has a sane efficiency', () => {
  for (const kind of Object.values(LINK_KINDS)) {
    assert.ok(kind.source.length > 10, kind.id);
    assert.ok(kind.efficiency > 0 && kind.efficiency <= 1, kind.id);
    assert.ok(kind.gbps > 0 && kind.latencyUs >= 0, kind.id);
  }
});

test('every preset, alone and as a 2-node cluster, passes the schema and routes every rank pair', () => {
  for (const name of PRESET_NAMES) {
    for (const nodes of [1, 2]) {
      const topology = parseTopology(buildPreset(name, { nodes }), name);
      const graph = new TopologyGraph(topology);
      const ranks = graph.accelerators;
      assert.equal(ranks.length, PRESETS[name].accelerators * nodes, `${name} x${nodes}`);
      for (const dst of [ranks[1], ranks[ranks.length - 1]].filter((d) => d !== undefined && d !== ranks[0]))
        assert.ok(graph.route(ranks[0], dst).length > 0, `${name} x${nodes}`);
    }
  }
});

test('every preset option passes the schema, and every accelerator reaches its peers in and across servers', () => {
  const variants: PresetOptions[] = [
    { gpus: 1 },
    { gpus: 3 },
    { nodes: 3, fabric: 'leaf-spine' },
    { nodes: 40, fabric: 'rail' },
    { nodes: 40, fabric: 'leaf-spine' },
    { nodes: 2, nicKind: 'ethernet', nicGbps: 25 },
    { nodes: 2, nicKind: 'efa' },
    { nodes: 2, nicKind: 'roce' },
    { nodes: 2, gpus: 5 },
    { nodes: 2, gpus: 3 },
  ];
  const fewerNics: PresetOptions[] = [
    { nodes: 2, nicsPerNode: 1 },
    { nodes: 2, nicsPerNode: 3 },
    { nodes: 2, nicsPerNode: 2, gpus: 3 },
    { nodes: 2, nicsPerNode: 3, gpus: 8 },
    { nodes: 2, nicsPerNode: 16 },
    { nodes: 3, nicsPerNode: 32, fabric: 'rail' },
    { nodes: 2, nicsPerNode: 12 },
  ];
  const board: PresetOptions[] = [
    { pcieGen: 3, gpusPerSwitch: 4, sockets: 1 },
    { pcieGen: 6, gpusPerSwitch: 1, sockets: 2, gpus: 16, nodes: 2 },
    { sockets: 4, gpusPerSwitch: 3, nodes: 2, nicsPerNode: 3 },
  ];
  for (const name of PRESET_NAMES) {
    for (const options of [
      ...variants,
      ...(PRESETS[name].fixedNics ? [] : fewerNics),
      ...(name === 'pcie-server' ? board : []),
    ].filter((o) => (o.gpus ?? 1) <= PRESETS[name].accelerators)) {
      const what = `${name} ${JSON.stringify(options)}`;
      const graph = new TopologyGraph(parseTopology(buildPreset(name, options), name));
      // Routes are found when a simulation first needs them; find them all here, where a missing one names the preset.
      const perNode = graph.accelerators.length / (options.nodes ?? 1);
      graph.accelerators.forEach((device, i) => {
        const peers = [
          graph.accelerators[((i + 1) % perNode) + i - (i % perNode)],
          graph.accelerators[(i + perNode) % graph.accelerators.length],
        ];
        for (const peer of peers) assert.doesNotThrow(() => graph.route(device, peer), what);
      });
    }
  }
});

test('a GPU with several NICs of its own crosses all of their ports; NICs that do not fall evenly stay one per GPU', () => {
  const nicLinks = (options: PresetOptions) => {
    const graph = new TopologyGraph(buildPreset('dgx-h100', { nodes: 2, ...options }));
    const gpu = graph.devices[graph.accelerators[3]];
    const nic = graph.deviceIndex(gpu.nic!);
    return {
      nics: graph.devices.filter((d) => d.kind === 'nic').length,
      ports: graph.linksFrom(nic).map((l) => [graph.devices[l.to].kind, l.count]),
      capacity: graph.routeCapacity(graph.route(graph.accelerators[3], graph.accelerators[11])),
    };
  };
  // AWS p5: 32 EFA of 100 Gb/s, four under each GPU's PCIe switch: one NIC a GPU, four ports.
  const p5 = nicLinks({ nicsPerNode: 32, nicGbps: 100, nicKind: 'efa' });
  assert.equal(p5.nics, 16);
  assert.deepEqual(p5.ports.sort(), [
    ['switch', 4],
    ['switch', 4],
  ]);
  assert.ok(Math.abs(p5.capacity - 4 * 12.5 * 0.9 * 1000) < 1e-6, `${p5.capacity}`);
  // 12 NICs over 4 PCIe switches of 2 GPUs: 3 a switch do not split evenly, so one NIC a GPU.
  const uneven = nicLinks({ nicsPerNode: 12 });
  assert.equal(uneven.nics, 24);
  assert.ok(uneven.ports.every(([, count]) => count === 1));
});

test('options a preset does not have are refused, not ignored', () => {
  assert.throws(() => buildPreset('dgx-h100', { sockets: 2 }), /--sockets describes pcie-server only/);
  assert.throws(() => buildPreset('mi300x', { pcieGen: 4 }), /--pcie-gen describes pcie-server only/);
  assert.throws(() => buildPreset('dgx-h100', { p2p: false }), /--p2p describes pcie-server only/);
  for (const name of ['ascend-910b', 'gb200-nvl72']) {
    assert.throws(
      () => buildPreset(name, { nodes: 2, nicsPerNode: 3 }),
      (err: Error & { code: string }) =>
        err.code === 'TSCCL_ERR_INVALID_ARGUMENT' && /one NIC per accelerator/.test(err.message),
    );
  }
});

test('presets have the link budgets of the hardware', () => {
  const budget = (name: string, options = {}) => {
    const graph = new TopologyGraph(buildPreset(name, options));
    return graph
      .linksFrom(graph.accelerators[0])
      .filter((l) => l.family === 'scale-up')
      .reduce((a, l) => a + l.count, 0);
  };
  assert.equal(budget('dgx1-v100'), 6);
  assert.equal(budget('dgx-a100'), 12);
  assert.equal(budget('dgx-h100'), 18);
  assert.equal(budget('hgx-h800'), 8);
  assert.equal(budget('mi300x'), 7);
  assert.equal(budget('ascend-910b'), 7);
  assert.equal(budget('ascend-910b', { gpus: 4 }), 3);
});

test('a rail-optimised cluster keeps same-index GPUs of two servers on one leaf; leaf-spine crosses the spine', () => {
  const rail = new TopologyGraph(buildPreset('dgx-h100', { nodes: 64 }));
  assert.ok(!routeNames(rail, 3, 8 * 5 + 3).some((n) => n.includes('spine')));
  const clos = new TopologyGraph(buildPreset('dgx-h100', { nodes: 64, fabric: 'leaf-spine' }));
  assert.ok(routeNames(clos, 3, 8 * 40 + 3).some((n) => n.includes('spine')));
});

test('accelerators the scale-up fabric joins talk over it, even where a host path is shorter; others over the host', () => {
  // A GB200 superchip's two GPUs share a Grace (two C2C hops, 0.3 us each) and reach each other
  // through the NVLink switches (1.3 us): NCCL, and so the model, takes the NVLink switches.
  const gb200 = routeKinds(new TopologyGraph(buildPreset('gb200-nvl72', { gpus: 4 })), 0, 1);
  assert.deepEqual(gb200, ['nvlink5', 'nvlink5']);
  // DGX-1: GPUs 0 and 5 share no NVLink and GPUs do not relay, so PCIe and the CPUs carry it.
  const dgx1 = routeKinds(new TopologyGraph(buildPreset('dgx1-v100')), 0, 5);
  assert.ok(dgx1.some((k) => k.startsWith('pcie')) && !dgx1.some((k) => k.startsWith('nvlink')), dgx1.join(', '));
});

test('bad topology files are refused with the JSON path of each problem', () => {
  assert.throws(
    () =>
      parseTopology(
        { name: 't', devices: [{ id: 'g', kind: 'gpu', host: 0 }], links: [{ a: 'g', b: 'x', kind: 'nvlink9' }] },
        'test',
      ),
    (err: Error & { code: string }) =>
      err.code === 'TSCCL_ERR_INVALID_ARGUMENT' && /links\[0\]\.kind: Invalid option/.test(err.message),
  );
  assert.throws(
    () =>
      parseTopology(
        {
          name: 't',
          devices: [
            { id: 'g', kind: 'gpu', host: 0 },
            { id: 'g', kind: 'gpu', host: 0 },
          ],
          links: [{ a: 'g', b: 'x', kind: 'nvlink3' }],
        },
        'test',
      ),
    (err: Error) =>
      /devices\[1\]\.id: duplicate device id 'g'/.test(err.message) &&
      /links\[0\]\.b: unknown device 'x'/.test(err.message),
  );
  assert.throws(
    () => parseTopology({ name: 't', devices: [{ id: 's', kind: 'switch' }], links: [] }, 'test'),
    /switchKind|at least one gpu/,
  );
  assert.throws(() => loadTopology('no-such-preset'), /expected local, a \.json file or one of/);
  assert.throws(() => buildPreset('dgx-h100', { gpus: 9 }), /--gpus 9 must be an integer from 1 to 8/);
  assert.throws(
    () =>
      parseTopology({ name: 't', devices: [{ id: 'g', kind: 'gpu', host: 0, stagingGBps: 10 }], links: [] }, 'test'),
    /devices\[0\]\.stagingGBps: only a cpu stages messages in its memory/,
  );
});

test('without peer-to-peer, a message between two GPUs of a host is staged in the memory of the CPU nearest its receiver', () => {
  // Two GPUs under one PCIe switch: up to their CPU, through its memory, and back down.
  const staged = new TopologyGraph(buildPreset('pcie-server', { p2p: false }));
  assert.deepEqual(routeNames(staged, 0, 1), [
    'gpu0->pcisw0',
    'pcisw0->cpu0',
    'cpu0 (staging)',
    'cpu0->pcisw0',
    'pcisw0->gpu1',
  ]);
  // Across sockets the message is staged at the receiver's socket, and only there.
  assert.deepEqual(routeNames(staged, 0, 7), [
    'gpu0->pcisw0',
    'pcisw0->cpu0',
    'cpu0->cpu1',
    'cpu1 (staging)',
    'cpu1->pcisw3',
    'pcisw3->gpu7',
  ]);
  // The staging link carries half the CPU's memory rate (each byte is written and read).
  const stage = Array.from(staged.route(staged.accelerators[0], staged.accelerators[1])).find(
    (l) => staged.link(l).kind === 'staging',
  )!;
  assert.equal(staged.capacities[stage], (200 * 1000) / 2);
  // With peer-to-peer, the same pair goes through the PCIe switch alone.
  assert.deepEqual(routeNames(new TopologyGraph(buildPreset('pcie-server')), 0, 1), ['gpu0->pcisw0', 'pcisw0->gpu1']);
});

test('the JSON Schema describes devices and links, and the fixture file loads', () => {
  const schema = topologyJsonSchema() as { properties: Record<string, unknown> };
  assert.ok('devices' in schema.properties && 'links' in schema.properties);
  const file = fileURLToPath(new URL('../../../test/fixtures/topologies/hgx-a100-4gpu.json', import.meta.url));
  assert.equal(new TopologyGraph(loadTopology(file)).accelerators.length, 4);
});
