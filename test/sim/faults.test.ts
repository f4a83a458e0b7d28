import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TscclError } from '../../src/errors.js';
import { planFaults, simulateWithFaults } from '../../src/sim/fault-cost.js';
import { type FaultSpec, parseFaults } from '../../src/sim/fault-spec.js';
import { failTopology } from '../../src/sim/failed-topology.js';
import { type SimRequest, simulateRow } from '../../src/sim/simulate.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { runTsccl } from '../harness/cli.js';

/** Two hosts of two GPUs, each GPU with its own 100 Gb/s NIC on one Ethernet switch: the network bounds every call between hosts. */
function twoHostsTwoNics() {
  const devices: Record<string, unknown>[] = [{ id: 'switch', kind: 'switch', switchKind: 'eth-switch' }];
  const links: Record<string, unknown>[] = [];
  for (const h of [0, 1]) {
    devices.push({ id: `h${h}.pci`, kind: 'switch', switchKind: 'pcie-switch', host: h });
    for (const g of [0, 1]) {
      devices.push({ id: `h${h}.gpu${g}`, kind: 'gpu', host: h, nic: `h${h}.nic${g}` });
      devices.push({ id: `h${h}.nic${g}`, kind: 'nic', host: h });
      links.push({ a: `h${h}.gpu${g}`, b: `h${h}.pci`, kind: 'pcie5', count: 1 });
      links.push({ a: `h${h}.nic${g}`, b: `h${h}.pci`, kind: 'pcie5', count: 1 });
      links.push({ a: `h${h}.nic${g}`, b: 'switch', kind: 'eth-100', count: 1 });
    }
  }
  return new TopologyGraph(parseTopology({ name: 'two hosts, two NICs each', devices, links }, 'test'));
}

const request = (bytes: number): SimRequest => ({
  op: 'all_reduce',
  bytes,
  algorithm: 'ring',
  mode: 'flow',
  nvls: false,
  elementBytes: 4,
  root: 0,
});

const withFaults = (graph: TopologyGraph, spec: FaultSpec, bytes: number, devices = graph.accelerators) =>
  simulateWithFaults(planFaults(spec, graph), graph, devices, (on) => simulateRow(on, devices, request(bytes)));

function invalid(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof TscclError, String(err));
    assert.equal(err.code, 'TSCCL_ERR_INVALID_ARGUMENT');
    assert.equal(err.details.argument, '--faults');
    assert.match(err.message, pattern);
    return true;
  });
}

test('a fault spec reads every item, and a bad one names itself and what was expected', () => {
  assert.deepEqual(
    parseFaults('ber=1e-9, down=h0.nic0, down=a/b, at=0.25, detect=20, retries=0, frame=1M, window=64K'),
    {
      ber: 1e-9,
      down: ['h0.nic0', 'a/b'],
      at: 0.25,
      detectMs: 20,
      retries: 0,
      frameBytes: 1024 * 1024,
      windowBytes: 64 * 1024,
    },
  );
  invalid(() => parseFaults('ber=2'), /ber=2: expected a bit error rate from 0 to 0.5/);
  invalid(() => parseFaults('ber=-1e-9'), /ber=-1e-9: expected a bit error rate/);
  invalid(() => parseFaults('bre=1e-9'), /'bre' is not a fault item: expected one of ber=, down=/);
  invalid(() => parseFaults('down='), /down= needs a value/);
  invalid(() => parseFaults('down=a/'), /down=a\/: expected a device id, or two joined by \//);
  invalid(() => parseFaults('ber=1e-9,at=1'), /at=1: expected a fraction of the call/);
  invalid(() => parseFaults('ber=1e-9,retries=1.5'), /retries=1.5: expected a whole number/);
  invalid(() => parseFaults('at=0.5'), /nothing fails/);
  invalid(() => parseFaults(''), /expected items like ber=1e-9/);
  assert.throws(() => parseFaults('ber=1e-9,frame=big'), /frame= 'big' is not a size/);
});

test('a failed NIC moves its accelerators to the nearest NIC of their host that still reaches the network', () => {
  const dgx = buildPreset('dgx-h100', { nodes: 2 });
  const { topology, rebound, failedLinks } = failTopology(dgx, ['n0.nic0']);
  // nic1 shares gpu0's PCIe switch: the nearest way out.
  assert.deepEqual([...rebound], [['n0.gpu0', 'n0.nic1']]);
  assert.equal(topology.devices.find((d) => d.id === 'n0.gpu0')?.nic, 'n0.nic1');
  assert.ok(failedLinks.has('n0.nic0->n0.pcisw0') && failedLinks.has('rail0.leaf0->n0.nic0'));
  assert.ok(!topology.links.some((l) => l.a === 'n0.nic0' || l.b === 'n0.nic0'));
  // A leaf of the rail fabric takes NIC 0 of every host with it.
  assert.deepEqual([...failTopology(dgx, ['rail0.leaf0']).rebound].sort(), [
    ['n0.gpu0', 'n0.nic1'],
    ['n1.gpu0', 'n1.nic1'],
  ]);
  // One cable of a bundle: the bundle carries on with one fewer.
  const bundle = failTopology(dgx, ['n0.gpu0/n0.nvswitch']).topology.links.find(
    (l) => l.a === 'n0.gpu0' && l.b === 'n0.nvswitch',
  );
  assert.equal(bundle?.count, 17);
});

test('failures that lose ranks instead of moving their traffic are refused, naming what is lost', () => {
  const dgx = buildPreset('dgx-h100', { nodes: 2 });
  const allNics = Array.from({ length: 8 }, (_, i) => `n1.nic${i}`);
  invalid(
    () => failTopology(dgx, allNics),
    /n1\.gpu0 \(host 1\) has no NIC that reaches the network: .*TSCCL_ERR_PEER_LOST/,
  );
  invalid(() => failTopology(dgx, ['n0.gpu3']), /n0\.gpu3 is a rank's own gpu/);
  invalid(() => failTopology(dgx, ['n0.nicc0']), /no device 'n0\.nicc0' .*did you mean 'n0\.nic0'/);
  invalid(() => failTopology(dgx, ['n0.nic0/spine']), /no working link joins n0\.nic0 and spine/);
  // Both ends of one cable fail once each: the second finds no working link.
  invalid(() => failTopology(twoHostsTwoNics().topology, ['h0.nic0/switch', 'h0.nic0/switch']), /no working link/);
});

test('with a NIC down from the start, a network-bound call runs at the pace of the NICs left', () => {
  const graph = twoHostsTwoNics();
  const bytes = 64 * 1024 * 1024;
  const clean = simulateRow(graph, graph.accelerators, request(bytes));
  const row = withFaults(graph, parseFaults('down=h0.nic1'), bytes);
  assert.equal(row.faults.cleanUs, clean.timeUs);
  assert.ok(row.faults.failedPathUsed);
  // Both of host 0's GPUs now leave through nic0: its link is the bottleneck, and the ring slower.
  assert.match(row.bottleneck?.link ?? '', /h0\.nic0/);
  assert.ok(row.timeUs > 1.5 * clean.timeUs, `${row.timeUs} against ${clean.timeUs}`);
  assert.equal(row.faults.failoverUs, row.timeUs - clean.timeUs);
  assert.equal(row.faults.resendUs, 0);
  assert.ok(row.algbwGBs < clean.algbwGBs);
});

test('a failure during the call adds the time to notice it, and nothing where the call did not use the failed path', () => {
  const graph = twoHostsTwoNics();
  const bytes = 16 * 1024 * 1024;
  const before = withFaults(graph, parseFaults('down=h0.nic1'), bytes);
  const during = withFaults(graph, parseFaults('down=h0.nic1,at=0.5,detect=7'), bytes);
  const slower = before.timeUs - before.faults.cleanUs;
  assert.ok(during.faults.failoverUs > 7000 + slower / 2, String(during.faults.failoverUs));
  assert.ok(during.faults.failoverUs < 7000 + slower / 2 + 1000, String(during.faults.failoverUs));
  // Host 0's two GPUs talk over their PCIe switch: no NIC carries the call.
  const local = withFaults(graph, parseFaults('down=h0.nic1,at=0.5'), bytes, graph.accelerators.slice(0, 2));
  assert.equal(local.faults.failedPathUsed, false);
  assert.equal(local.timeUs, local.faults.cleanUs);
});

test('bit errors cost resent frames between hosts, more as the rate rises, and none within a host', () => {
  const graph = twoHostsTwoNics();
  const bytes = 256 * 1024 * 1024;
  const costs = [1e-10, 1e-8, 1e-6].map((ber) => withFaults(graph, { ...parseFaults(`ber=${ber}`) }, bytes).faults);
  for (const [i, c] of costs.entries()) {
    assert.ok(c.framesResent > 0 && c.resendUs > 0, JSON.stringify(c));
    if (i > 0) {
      assert.ok(c.framesResent > costs[i - 1].framesResent);
      assert.ok(c.timeUs > costs[i - 1].timeUs);
      assert.ok(c.failProbability >= costs[i - 1].failProbability);
    }
  }
  // A frame of 4 MiB crosses two network links (NIC to switch, switch to NIC).
  const [low] = costs;
  assert.equal(low.frameBytes, 4 * 1024 * 1024);
  assert.ok(Math.abs(low.frameErrorRate - -Math.expm1(8 * 4 * 2 ** 20 * 2 * Math.log1p(-1e-10))) < 1e-15);
  // Fewer retries make a lost call likelier.
  const threeRetries = withFaults(graph, parseFaults('ber=1e-11'), bytes).faults;
  const noRetry = withFaults(graph, parseFaults('ber=1e-11,retries=0'), bytes).faults;
  assert.ok(noRetry.failProbability > threeRetries.failProbability * 1000, JSON.stringify([noRetry, threeRetries]));
  // At 1e-6 a 4 MiB frame almost never arrives intact: the call is lost.
  assert.ok(costs[2].failProbability > 0.99);
  const local = withFaults(graph, parseFaults('ber=1e-6'), bytes, graph.accelerators.slice(0, 2)).faults;
  assert.deepEqual([local.framesResent, local.resendUs, local.failProbability], [0, 0, 0]);
});

test('tsccl sim --faults prints the recovery per row and its JSON carries it; a bad spec exits with its code', async () => {
  const sim = (...args: string[]) => runTsccl(['sim', ...args, '--topo', 'dgx-h100', '--nodes', '2']);
  const json = await sim('-b', '64M', '-e', '64M', '--faults', 'down=n0.nic0,ber=1e-8', '--format', 'json');
  assert.equal(json.code, 0, json.stderr);
  const [row] = JSON.parse(json.stdout).rows;
  assert.equal(row.faults.failedPathUsed, true);
  assert.ok(row.faults.framesResent > 0);
  assert.equal(row.timeUs, row.faults.timeUs);
  const table = await sim('-b', '1M', '-e', '1M', '--faults', 'down=n0.nic0');
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^# failed over: n0\.gpu0 -> n0\.nic1$/m);
  assert.match(table.stdout, /^# recovery per row:$/m);
  const layout = ['--model', 'llama-70b', '--tp', '8', '--pp', '1', '--dp', '2'];
  const train = await sim('train', ...layout, '--faults', 'ber=1e-7');
  assert.equal(train.code, 0, train.stderr);
  assert.match(train.stdout, /^# with faults: bit error rate 1e-7/m);
  assert.match(train.stdout, /^# {3}step [\d.]+ ms against [\d.]+ ms clean/m);
  // The tree's chains end on other rails across the servers, so it needs the spine (the NVLS tree
  // and the ring keep to their rails and would not).
  const lost = await sim('-b', '1M', '-e', '1M', '--algo', 'tree', '--faults', 'down=spine');
  assert.equal(lost.code, 1);
  assert.match(lost.stderr, /TSCCL_ERR_INVALID_ARGUMENT: --faults: after spine fail, .*TSCCL_ERR_PEER_LOST/);
  const bad = await sim('--faults', 'ber=lots');
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /ber=lots: expected a bit error rate/);
});
