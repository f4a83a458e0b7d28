import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Collective } from '../../src/algorithms/schedule.js';
import { BY_REFERENCE_MIN_BYTES, ONE_SHOT } from '../../src/exec/one-shot.js';
import { simulateFlows } from '../../src/sim/flow-sim.js';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

const CALL_US = 10;
const WAKE_US = 100;
const RELEASE_US = 30;

/** Thread ranks on `cores` cores whose bytes cost nothing, so only call and wake-up costs remain. */
function cpuRanks(ranks: number, cores: number): TopologyGraph {
  const detection = fakeDetection(cores);
  const base = defaultProfile(cores, 'h');
  const profile = {
    ...base,
    reduceGBps: 1e9,
    // A 2-rank one-shot call measures its fixed cost and one wake-up.
    shm: {
      ...base.shm,
      callUs: CALL_US,
      messageUs: WAKE_US,
      oversubscribedMessageUs: WAKE_US,
      releaseUs: RELEASE_US,
      copyGBps: 1e9,
      oneShotUs: CALL_US + WAKE_US,
      oneShotGBps: 1e9,
    },
  };
  return new TopologyGraph(parseTopology(localTopology({ ranks, transport: 'shm', profile, detection }), 'local'));
}

const time = (graph: TopologyGraph, collective: Collective, algorithm: string) =>
  simulateFlows(graph, graph.accelerators, {
    collective,
    count: 2,
    elementBytes: 4,
    root: 0,
    algorithm,
    protocol: 'shm',
  }).timeUs;

test('a rank with a core pays a hand-off for every message it takes: a chain of hand-offs one each, messages posted together too', () => {
  const graph = cpuRanks(4, 4);
  // The ring: 3 steps, and at each a rank waits for its left neighbour's forward.
  assert.ok(Math.abs(time(graph, 'allGather', 'ring') - (CALL_US + 3 * WAKE_US)) < 1);
  // Direct: every rank posts its block to all peers, then copies its own and takes the three
  // peers' blocks, which were there already: the hand-off is work on each step, not a wait that
  // ends when the block was posted long enough ago.
  assert.ok(Math.abs(time(graph, 'allGather', 'direct') - (CALL_US + 3 * WAKE_US)) < 1);
});

test('ranks that outnumber the cores are woken to begin and to take each message, and queue for the cores', () => {
  // 8 ranks on 2 cores, woken 2 at a time: 4 rounds to begin the call, 28 to take the 7 blocks
  // of each of the 8 ranks (each message a hand-off, in a run too), and 1 for the senders whose
  // last block was taken after they ended. With a core each, a hand-off for each of the 7 blocks.
  assert.ok(Math.abs(time(cpuRanks(8, 2), 'allGather', 'direct') - (CALL_US + 33 * WAKE_US)) < 1);
  assert.ok(Math.abs(time(cpuRanks(8, 8), 'allGather', 'direct') - (CALL_US + 7 * WAKE_US)) < 1);
  // 4 ranks on 2 cores: 2 rounds to begin, 6 to take 3 blocks each, 1 for the senders.
  assert.ok(Math.abs(time(cpuRanks(4, 2), 'allGather', 'direct') - (CALL_US + 9 * WAKE_US)) < 1);
});

test("a call ends when the receivers have taken its sends, as the executor's does", () => {
  // On one core both ranks are woken to begin, one after the other. The root posts and is done
  // with its own part at once, but its buffer is read in place: it waits for the receiver, which
  // is woken to take the message, then is woken itself.
  assert.ok(Math.abs(time(cpuRanks(2, 1), 'broadcast', 'direct') - (CALL_US + 4 * WAKE_US)) < 1);
  // With a core each, no one waits to begin; the message posted as the receiver asks for it is
  // still a hand-off away, and the root, spinning, sees it taken after the release time.
  assert.ok(Math.abs(time(cpuRanks(2, 2), 'broadcast', 'direct') - (CALL_US + WAKE_US + RELEASE_US)) < 1);
});

interface CopyingOptions {
  readonly peerWrittenGBps?: number;
  readonly invalidationNsPerByte?: number;
  /** Cores the ranks run on (default: one each). */
  readonly cores?: number;
  readonly handOffUs?: number;
  /** The part of a crowded rank's hand-off that takes a core (default: all of it). */
  readonly switchUs?: number;
  /** One core's fold speed, as a profile's memory tiers measure it (default: none measured, the kernel free). */
  readonly foldGBps?: number;
}

/**
 * Thread ranks, a core each, whose hand-offs cost nothing and whose cores each copy 1 GB/s (1000
 * bytes/us), bytes their peer has just written as fast, and bytes their peer read as cheaply as
 * any, unless said otherwise.
 */
function copyingRanks(ranks: number, options: CopyingOptions = {}): TopologyGraph {
  const { peerWrittenGBps = 1, invalidationNsPerByte = 0, cores = ranks, handOffUs = 0, switchUs, foldGBps } = options;
  const detection = fakeDetection(cores);
  const base = defaultProfile(cores, 'h');
  const profile = {
    ...base,
    reduceGBps: foldGBps ?? 1e9,
    memoryTiers: foldGBps === undefined ? undefined : [{ bytes: 1, copyGBps: 1, foldGBps }],
    shm: {
      ...base.shm,
      callUs: CALL_US,
      messageUs: handOffUs,
      oversubscribedMessageUs: handOffUs,
      releaseUs: 0,
      copyGBps: 1,
      peerWrittenGBps,
      invalidationTiers: [{ bytes: 1, nsPerByte: invalidationNsPerByte }],
      ...(switchUs === undefined ? {} : { oversubscribedSwitchUs: switchUs }),
    },
  };
  return new TopologyGraph(parseTopology(localTopology({ ranks, transport: 'shm', profile, detection }), 'local'));
}

const copying = (
  ranks: number,
  collective: Collective,
  algorithm: string,
  count: number,
  options: CopyingOptions = {},
) => {
  const graph = copyingRanks(ranks, options);
  return (
    simulateFlows(graph, graph.accelerators, {
      collective,
      count,
      elementBytes: 4,
      root: 0,
      algorithm,
      protocol: 'shm',
      chunkCount: count,
    }).timeUs - CALL_US
  );
};

test('thread ranks pull: each receiver copies on its own core, so a root feeds many at once', () => {
  // 4 MB from the root to 3 ranks, and the root's own copy: 4 cores copying 4 MB each at once.
  // Pushed over the root's link instead, its 3 copies would take 12 ms.
  const us = copying(4, 'broadcast', 'direct', 1_000_000);
  assert.ok(Math.abs(us - 4000) < 1, `${us}`);
});

test("thread ranks pull: a rank copies its own block and its peers' one after the other", () => {
  // 2 ranks gather 4 MB blocks: each copies its own block, then reads its peer's: 8 ms, not 4.
  const us = copying(2, 'allGather', 'direct', 1_000_000);
  assert.ok(Math.abs(us - 8000) < 1, `${us}`);
});

test("thread ranks pull: folding a message moves 1.5 times a copy's memory traffic", () => {
  // 2 ranks, recursive doubling of 4 MB: each reads its peer's 4 MB and folds it into its own
  // (2 reads and a write, against a copy's read and write): 6 ms at 1 GB/s, not 4. The
  // reduction kernel itself is free here (1e9 GB/s).
  const us = copying(2, 'allReduce', 'recursive_doubling', 1_000_000);
  // The out-of-place exchange lands in the output: no final copy.
  assert.ok(Math.abs(us - 6000) < 1, `${us}`);
});

test('thread ranks pull: where the profile measured folding, a fold loads the copy path by the ratio of the two speeds', () => {
  // As fast as a copy (the kernel in the caches): 4 MB folded in 4 ms; at half a copy's speed, 8.
  assert.ok(Math.abs(copying(2, 'allReduce', 'recursive_doubling', 1_000_000, { foldGBps: 1 }) - 4000) < 1);
  assert.ok(Math.abs(copying(2, 'allReduce', 'recursive_doubling', 1_000_000, { foldGBps: 0.5 }) - 8000) < 1);
});

test("thread ranks pull: a piece its sender wrote in the same call comes from the sender's cache, at the peer-written speed", () => {
  // 2-rank ring of 4 MB: each folds its peer's input half (2 MB, 3 ms at 1 GB/s), then copies the
  // half its peer just reduced (2 MB): 2 ms at 1 GB/s, 4 at 0.5. Recursive doubling reads inputs only.
  const fast = copying(2, 'allReduce', 'ring', 1_000_000);
  const slow = copying(2, 'allReduce', 'ring', 1_000_000, { peerWrittenGBps: 0.5 });
  assert.ok(Math.abs(fast - 5000) < 1, `${fast}`);
  assert.ok(Math.abs(slow - 7000) < 1, `${slow}`);
  assert.equal(
    copying(2, 'allReduce', 'recursive_doubling', 1_000_000, { peerWrittenGBps: 0.5 }),
    copying(2, 'allReduce', 'recursive_doubling', 1_000_000),
  );
});

test('thread ranks pull: overwriting what a peer read costs the writer the invalidation, in every call of a run', () => {
  // 2-rank ring of 4 MB: each reduces into the output half its peer copies, so in steady state
  // the peer's cache holds those 2 MB when it writes them again: 0.5 ns per byte adds 1 ms.
  // Its other half, and everything recursive doubling writes, no peer reads.
  assert.ok(Math.abs(copying(2, 'allReduce', 'ring', 1_000_000, { invalidationNsPerByte: 0.5 }) - 6000) < 1);
  assert.equal(
    copying(2, 'allReduce', 'recursive_doubling', 1_000_000, { invalidationNsPerByte: 0.5 }),
    copying(2, 'allReduce', 'recursive_doubling', 1_000_000),
  );
  // Direct all-gather copies its peers' inputs, which nobody writes in a call.
  assert.equal(
    copying(4, 'allGather', 'direct', 1_000_000, { invalidationNsPerByte: 0.5 }),
    copying(4, 'allGather', 'direct', 1_000_000),
  );
});

test('ranks that outnumber the cores copy on them: their copies and hand-offs take turns, not overlap', () => {
  // 4 ranks on 2 cores gather 100 KB blocks: each copies 4 blocks of 100 us, 16 in all on 2
  // cores (800 us), and pays 4 hand-offs of 100 us (900 us alone, with the senders' last). The
  // copies are work on the cores as the hand-offs are, so the two add up; as flows beside the
  // hand-offs, the direct all-gather took 1000 us.
  for (const algorithm of ['direct', 'ring']) {
    const crowded = { cores: 2, handOffUs: 100 };
    const both = copying(4, 'allGather', algorithm, 25_000, crowded);
    const handOffs = copying(4, 'allGather', algorithm, 1, crowded);
    const copies = copying(4, 'allGather', algorithm, 25_000, { cores: 2 });
    assert.ok(Math.abs(copies - 800) < 1, `${algorithm}: ${copies}`);
    assert.ok(Math.abs(handOffs - 900) < 2, `${algorithm}: ${handOffs}`);
    assert.ok(Math.abs(both - (handOffs + copies)) < 2, `${algorithm}: ${both}`);
  }
});

test("a crowded rank's hand-off whose latency is off the cores hides behind the other ranks' copies, and only its switch takes a core", () => {
  // As above, 4 ranks on 2 cores, 100 KB blocks, 100 us hand-offs.
  for (const algorithm of ['direct', 'ring']) {
    const run = (switchUs: number | undefined, count: number) =>
      copying(4, 'allGather', algorithm, count, {
        cores: 2,
        handOffUs: 100,
        ...(switchUs === undefined ? {} : { switchUs }),
      });
    const copies = copying(4, 'allGather', algorithm, 25_000, { cores: 2 });
    // All of it on a core: as without the split.
    assert.ok(Math.abs(run(100, 25_000) - run(undefined, 25_000)) < 1e-6, algorithm);
    // None of it on a core: each hand-off still waits its 100 us, but the cores copy meanwhile,
    // so the call takes less than its copies and hand-offs one after the other.
    const [latencyOnly, handOffsAlone] = [run(0, 25_000), run(0, 1)];
    assert.ok(
      latencyOnly < copies + handOffsAlone - 100,
      `${algorithm}: ${latencyOnly} against ${copies} + ${handOffsAlone}`,
    );
    assert.ok(latencyOnly >= copies, `${algorithm}: ${latencyOnly} under the copies' ${copies}`);
    // In between, in order.
    const half = run(50, 25_000);
    assert.ok(
      latencyOnly < half && half < run(100, 25_000),
      `${algorithm}: ${latencyOnly} ${half} ${run(100, 25_000)}`,
    );
  }
});

test('the one-shot path: one wake-up per rank, and reads that grow with the peers read', () => {
  const graph = cpuRanks(4, 4);
  for (const collective of ['allReduce', 'allGather', 'reduceScatter', 'broadcast'] as const) {
    assert.ok(Math.abs(time(graph, collective, ONE_SHOT) - (CALL_US + WAKE_US)) < 1, collective);
  }
  const detection = fakeDetection(4);
  const slow = new TopologyGraph(
    parseTopology(
      localTopology({ ranks: 4, transport: 'shm', profile: { ...defaultProfile(4, 'h'), reduceGBps: 1 }, detection }),
      'local',
    ),
  );
  const big = (collective: Collective) =>
    simulateFlows(slow, slow.accelerators, {
      collective,
      count: 2 ** 20,
      elementBytes: 4,
      root: 0,
      algorithm: ONE_SHOT,
      protocol: 'shm',
    }).timeUs;
  // At 1 GB/s, folding 3 peers' 4 MiB takes ~12.6 ms; a broadcast reads only the root's message.
  assert.ok(big('allReduce') > 12_000, `${big('allReduce')}`);
  assert.ok(big('broadcast') < big('allReduce') / 2, `${big('broadcast')} vs ${big('allReduce')}`);
});

test("the one-shot path pays for lines in a peer's cache as the schedules do where it copies through slots, and not where it publishes by reference", () => {
  const oneShot = (count: number, options: CopyingOptions) => copying(2, 'allGather', ONE_SHOT, count, options);
  // 1 KiB copied through the slots, at 1 GB/s: published over lines the peer read in the call
  // before (0.5 ns per byte is 0.51 us more), and read from the writer's cache at half the copy
  // speed (1.02 us more).
  const small = 256;
  assert.ok(small * 4 < BY_REFERENCE_MIN_BYTES);
  const plain = oneShot(small, {});
  assert.ok(
    Math.abs(oneShot(small, { invalidationNsPerByte: 0.5 }) - plain - 0.512) < 0.01,
    `${oneShot(small, { invalidationNsPerByte: 0.5 })} vs ${plain}`,
  );
  assert.ok(
    Math.abs(oneShot(small, { peerWrittenGBps: 0.5 }) - plain - 1.024) < 0.01,
    `${oneShot(small, { peerWrittenGBps: 0.5 })} vs ${plain}`,
  );
  // 4 MB by reference: nothing is written into a slot, and the reader takes the publisher's
  // input, which nobody wrote in the call.
  const large = 1_000_000;
  assert.equal(oneShot(large, { invalidationNsPerByte: 0.5 }), oneShot(large, {}));
  assert.equal(oneShot(large, { peerWrittenGBps: 0.5 }), oneShot(large, {}));
});

test('over TCP each end spends its overhead on every message: the hand-off and the stream tune measures come back', () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const [overheadUs, messageUs] = [15, 50];
  const oneShotUs = 70;
  const profile = { ...base, tcp: { ...base.tcp, callUs: CALL_US, messageUs, gbps: 1e9, overheadUs, oneShotUs } };
  const graph = new TopologyGraph(
    parseTopology(localTopology({ ranks: 2, transport: 'tcp', profile, detection }), 'local'),
  );
  const run = (collective: Collective, algorithm: string, count: number, chunkCount?: number) =>
    simulateFlows(graph, graph.accelerators, {
      collective,
      count,
      elementBytes: 4,
      root: 0,
      algorithm,
      protocol: 'tcp',
      ...(chunkCount ? { chunkCount } : {}),
    }).timeUs;
  // One exchange: each end's overhead sending and taking, and the wake-up between: the hand-off
  // (and the TCP stack's switching latency, 2 us).
  const exchange = run('allReduce', 'recursive_doubling', 2);
  assert.ok(exchange >= CALL_US + messageUs && exchange < CALL_US + messageUs + 3, `${exchange}`);
  // A broadcast in 64 pieces: the receiver falls behind the root and takes the rest as they come,
  // so each piece after the first costs one overhead.
  const [whole, pieced] = [run('broadcast', 'binomial_tree', 64), run('broadcast', 'binomial_tree', 64, 1)];
  assert.ok(Math.abs((pieced - whole) / 63 - overheadUs) < 0.1, `${whole} ${pieced}`);
  // The one-shot path: the 2-rank call tune measures comes back, of it a frame out to the peer
  // and one in (each an overhead) and one wake-up; 4 ranks send and take 3 frames each.
  const oneShot = run('allReduce', ONE_SHOT, 2);
  assert.ok(Math.abs(oneShot - oneShotUs) < 1, `${oneShot}`);
  const fourRanks = new TopologyGraph(
    parseTopology(localTopology({ ranks: 4, transport: 'tcp', profile, detection: fakeDetection(4) }), 'local'),
  );
  const wider = simulateFlows(fourRanks, fourRanks.accelerators, {
    collective: 'allGather',
    count: 2,
    elementBytes: 4,
    root: 0,
    algorithm: ONE_SHOT,
    protocol: 'tcp',
  }).timeUs;
  assert.ok(Math.abs(wider - (oneShotUs + 4 * overheadUs)) < 1, `${wider}`);
});

test("over TCP a sender's thread copies its message into the socket before its own copy, and is free once it has, however slow the wire", () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const [streamGBps, copyGBps, bytes] = [2, 10, 64 * 2 ** 20];
  const profile = {
    ...base,
    shm: { ...base.shm, copyGBps },
    tcp: { ...base.tcp, callUs: 0, messageUs: 0, overheadUs: 0, gbps: 1, streamGBps, sizeTiers: undefined },
  };
  const loopback = localTopology({ ranks: 2, transport: 'tcp', profile, detection });
  const broadcast = (graph: TopologyGraph) =>
    simulateFlows(graph, graph.accelerators, {
      collective: 'broadcast',
      count: bytes / 4,
      elementBytes: 4,
      root: 0,
      algorithm: 'direct',
      protocol: 'tcp',
    }).timeUs;
  // Over loopback the stream is the root's copy into its socket; its own output comes after.
  const [streamUs, rootCopyUs] = [bytes / (streamGBps * 1e3), bytes / (copyGBps * 1e3)];
  const local = broadcast(new TopologyGraph(parseTopology(loopback, 'local')));
  assert.ok(Math.abs(local - (streamUs + rootCopyUs)) < 0.01 * local, `${local} against ${streamUs} + ${rootCopyUs}`);
  // A wire 16x slower than the copy: the root's own copy runs while the wire drains.
  const wireGBps = streamGBps / 16;
  const slowWire = { ...loopback, links: loopback.links.map((l) => ({ ...l, gbps: wireGBps })) };
  const slow = broadcast(new TopologyGraph(parseTopology(slowWire, 'slow wire')));
  assert.ok(Math.abs(slow - bytes / (wireGBps * 1e3)) < 0.01 * slow, `${slow}`);
});
