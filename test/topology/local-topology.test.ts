import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BY_REFERENCE_MIN_BYTES, ONE_SHOT } from '../../src/exec/one-shot.js';
import { simulateFlows } from '../../src/sim/flow-sim.js';
import { simulateRow } from '../../src/sim/simulate.js';
import { tscclChooser } from '../../src/tuner/sim-chooser.js';
import { type LocalProfile, defaultProfile, loadProfile, saveProfile } from '../../src/topology/local-profile.js';
import { detectLocal, localTopology, parseCpuList, tcpProtocol } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

test('cpulists parse as Linux writes them', () => {
  assert.deepEqual(parseCpuList('0-3,8,10-11\n'), [0, 1, 2, 3, 8, 10, 11]);
  assert.deepEqual(parseCpuList('5'), [5]);
});

test('detection finds the cores, at least one NUMA node covering them, and the loopback interface', () => {
  const d = detectLocal();
  assert.ok(d.cores >= 1);
  assert.ok(d.numaNodes.length >= 1 && d.numaNodes.flatMap((n) => n.cpus).length >= 1);
  assert.ok(d.interfaces.some((i) => i.internal));
});

test('a profile round-trips; a missing one gives the defaults; a malformed one is an error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-profile-'));
  const path = join(dir, 'profile.json');
  try {
    assert.match(loadProfile(2, 'h', path).source, /defaults/);
    const profile = { ...defaultProfile(2, 'h'), measuredAt: '2026-01-01T00:00:00.000Z', runs: 3 };
    saveProfile(profile, path);
    assert.deepEqual(loadProfile(2, 'h', path).profile, profile);
    writeFileSync(path, '{"version":1}');
    assert.throws(() => loadProfile(2, 'h', path), /Profile .* is not valid/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the local topology is a valid topology whose ranks reduce on their cores', () => {
  const detection = fakeDetection(2);
  const slow = { ...defaultProfile(2, 'h'), reduceGBps: 0.5 };
  const fast = { ...defaultProfile(2, 'h'), reduceGBps: 50 };
  const time = (profile: typeof slow) => {
    const graph = new TopologyGraph(
      parseTopology(localTopology({ ranks: 2, transport: 'shm', profile, detection }), 'local'),
    );
    assert.equal(graph.accelerators.length, 2);
    return simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes: 16 * 2 ** 20,
      algorithm: 'ring',
      mode: 'flow',
      nvls: false,
      elementBytes: 4,
      root: 0,
      chooser: tscclChooser,
    }).timeUs;
  };
  assert.ok(time(slow) > time(fast) + 10_000, 'reducing 8 MiB at 0.5 GB/s costs ~16 ms more');
  const tcp = parseTopology(localTopology({ ranks: 4, transport: 'tcp', profile: fast, detection }), 'local');
  assert.deepEqual(
    tcp.protocols!.map((p) => p.name),
    ['tcp'],
  );
});

test("the TCP protocol splits the measured hand-off into both ends' overhead and the wake-up, for this host and for emulated ones", () => {
  const base = defaultProfile(2, 'h');
  const profile: LocalProfile = { ...base, tcp: { ...base.tcp, messageUs: 50, overheadUs: 10, oneShotUs: 65 } };
  // The one-shot call's own cost is what its measured 2-rank call leaves beside the hand-off.
  // The sender's thread copies a message into its socket at the stream's pace.
  assert.deepEqual(tcpProtocol(profile, 1), {
    name: 'tcp',
    baseUs: base.tcp.callUs,
    stepUs: 0,
    netStepUs: 0,
    efficiency: 1,
    wakeUs: 30,
    rankCores: 1,
    overheadUs: 10,
    sendCopyGBps: base.tcp.streamGBps,
    oneShotUs: 15,
  });
  assert.equal(
    tcpProtocol({ ...profile, tcp: { ...profile.tcp, messageUs: 15 } }, 1).wakeUs,
    0,
    'an overhead above half the hand-off leaves no negative wake-up',
  );
  const local = localTopology({ ranks: 4, transport: 'tcp', profile, detection: fakeDetection(2) });
  assert.deepEqual(
    local.protocols,
    [tcpProtocol(profile, 2)],
    "--topo local uses the same protocol, on all the host's cores",
  );
});

test('process ranks that outnumber the cores move together what the cores move', () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const profile: LocalProfile = { ...base, tcp: { ...base.tcp, gbps: 1.5 } };
  const stack = (ranks: number, p: LocalProfile) =>
    localTopology({ ranks, transport: 'tcp', profile: p, detection }).devices.find((d) => d.id === 'tcp-stack')!;
  assert.equal(stack(2, profile).forwardGBps, 3, 'as many processes as cores: cores x the rate of one pair');
  assert.equal(stack(4, profile).forwardGBps, 3, 'twice as many: the same cores, the same total');
  assert.equal(
    stack(4, { ...profile, tcp: { ...profile.tcp, oversubscribedGBps: 2 } }).forwardGBps,
    3,
    "an older profile's ring figure is not read",
  );
  const socketEnd = (ranks: number) =>
    localTopology({ ranks, transport: 'tcp', profile, detection }).devices.find((d) => d.id === 'rank0-socket')!;
  assert.ok(
    stack(2, profile).loopbackTiers !== undefined,
    'while each process has a core, all of them together move small messages faster',
  );
  assert.equal(
    stack(4, profile).loopbackTiers,
    undefined,
    'processes taking turns on the cores move one speed together',
  );
  assert.deepEqual(
    socketEnd(4).loopbackTiers,
    socketEnd(2).loopbackTiers,
    'each process still moves a small message faster',
  );
  assert.ok(socketEnd(4).loopbackTiers !== undefined);
});

test('a process sends alone at its stream rate, and sends and receives together at the sendrecv rate each way', () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const profile: LocalProfile = {
    ...base,
    tcp: { ...base.tcp, callUs: 0, messageUs: 0, overheadUs: 0, gbps: 1.5, streamGBps: 2.5 },
  };
  const graph = new TopologyGraph(
    parseTopology(localTopology({ ranks: 2, transport: 'tcp', profile, detection }), 'local'),
  );
  const bytes = 64 * 2 ** 20;
  const run = (op: 'broadcast' | 'all_gather') =>
    simulateRow(graph, graph.accelerators, {
      op,
      bytes,
      algorithm: 'direct',
      mode: 'flow',
      nvls: false,
      elementBytes: 4,
      root: 0,
      chooser: tscclChooser,
    }).timeUs;
  // Out of place the root copies its own output once its thread has sent: after the stream.
  const rootCopyUs = bytes / (base.shm.copyGBps * 1e3);
  const oneWay = bytes / (run('broadcast') - rootCopyUs) / 1e3;
  // A 2-rank all-gather is a sendrecv of half the bytes each way.
  const eachWay = bytes / 2 / run('all_gather') / 1e3;
  assert.ok(Math.abs(oneWay - 2.5) < 0.05, `one way: ${oneWay.toFixed(2)} GB/s`);
  assert.ok(Math.abs(eachWay - 1.5) < 0.05, `each way of a sendrecv: ${eachWay.toFixed(2)} GB/s`);
});

test('the one-shot path costs what the profile measured it at: its own call cost, the rate a reader takes a message, and the release of one published by reference', () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const broadcast = (profile: LocalProfile, bytes: number) => {
    const graph = new TopologyGraph(
      parseTopology(localTopology({ ranks: 2, transport: 'shm', profile, detection }), 'local'),
    );
    return simulateFlows(graph, graph.accelerators, {
      collective: 'broadcast',
      count: bytes / 4,
      elementBytes: 4,
      root: 0,
      algorithm: ONE_SHOT,
      protocol: 'shm',
    }).timeUs;
  };
  // Lines in the peer's cache cost nothing here (they add to the path's cost, cpu-ranks.test.ts).
  const free = { invalidationTiers: [{ bytes: 1, nsPerByte: 0 }], peerWrittenGBps: 1000 };
  const releaseUs = 0.5;
  const profile: LocalProfile = { ...base, shm: { ...base.shm, ...free, oneShotUs: 9, oneShotGBps: 4, releaseUs } };
  // The 2-rank broadcast of 8 B tsccl tune measures comes back as measured; 32 KiB goes by
  // reference: one move at the rate, and the root's wait to see it taken.
  assert.ok(Math.abs(broadcast(profile, 4) - 9) < 0.1, `${broadcast(profile, 4)}`);
  assert.ok(32768 >= BY_REFERENCE_MIN_BYTES);
  const perByte = (broadcast(profile, 32768) - broadcast(profile, 4) - releaseUs) / 32764;
  assert.ok(Math.abs(perByte * 4e3 - 1) < 0.05, `${perByte * 4e3}`);
  // A profile written before the path was measured gets the defaults.
  const { oneShotUs, oneShotGBps, ...older } = base.shm;
  assert.ok(oneShotUs !== undefined && oneShotGBps !== undefined);
  assert.equal(broadcast({ ...base, shm: older }, 32768), broadcast(base, 32768));
});

test('detection counts the cores this process may run on, as the ranks do, not every core of the machine', (t) => {
  // Without /sys, the one NUMA node still holds every core of the machine, bound or not.
  const probe = spawnSync(
    'taskset',
    [
      '-c',
      '0',
      process.execPath,
      '--input-type=module',
      '-e',
      `import { detectLocal } from ${JSON.stringify(new URL('../../src/topology/local-topology.js', import.meta.url).href)};
     const d = detectLocal('/nonexistent-sys'); console.log(d.cores, d.numaNodes[0].cpus.length === d.machineCores);`,
    ],
    { encoding: 'utf8' },
  );
  if (probe.error !== undefined) {
    t.skip(`taskset (util-linux) is not available: ${probe.error.message}`);
    return;
  }
  assert.equal(probe.status, 0, probe.stderr);
  assert.equal(probe.stdout.trim(), '1 true');
});
