import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Collective } from '../../src/algorithms/schedule.js';
import { oneShotOffer } from '../../src/exec/one-shot.js';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { callCount } from '../../src/sim/machine-cost.js';
import {
  adoptChoices,
  choiceTable,
  classesRankedOnDemand,
  parseAlgorithmOverrides,
  prepareChoices,
  selectAlgorithm,
} from '../../src/tuner/select.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

test('the tuner picks latency-optimal all-reduce for small messages, direct shared memory for large', () => {
  assert.equal(
    selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4 }).algorithm,
    'recursive_doubling',
  );
  assert.equal(
    selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 64 << 20, elementBytes: 4 }).algorithm,
    'direct',
  );
  assert.equal(
    selectAlgorithm({ collective: 'allReduce', nranks: 2, bytes: 64 << 20, elementBytes: 4 }).algorithm,
    'recursive_doubling',
  );
  assert.equal(
    selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4, algorithm: 'ring' }).algorithm,
    'ring',
  );
  // Several ranks on each of several hosts: one stream per host crosses the network.
  assert.equal(
    selectAlgorithm({ collective: 'allGather', nranks: 8, bytes: 8, elementBytes: 4, hostCount: 2 }).algorithm,
    'hierarchical',
  );
  assert.equal(
    selectAlgorithm({ collective: 'allGather', nranks: 4, bytes: 8, elementBytes: 4, hostCount: 4 }).algorithm,
    'ring',
  );
  // Every exchange of an all-to-all in flight at once, as NCCL runs it.
  assert.equal(
    selectAlgorithm({ collective: 'allToAll', nranks: 8, bytes: 8, elementBytes: 4, hostCount: 2 }).algorithm,
    'direct',
  );
  assert.throws(
    () => selectAlgorithm({ collective: 'broadcast', nranks: 4, bytes: 8, elementBytes: 4, algorithm: 'pairwise' }),
    /algorithm 'pairwise' is not available for broadcast: expected one of binomial_tree, direct, hierarchical, ring, one_shot/,
  );
});

test('TSCCL_ALGO overrides parse NCCL-style and reject unknown names clearly', () => {
  const o = parseAlgorithmOverrides('allreduce:ring; all_gather:ring');
  assert.equal(o.get('allReduce'), 'ring');
  assert.equal(o.get('allGather'), 'ring');
  assert.throws(
    () => parseAlgorithmOverrides('allreduce:double_tree'),
    /TSCCL_ALGO 'double_tree' is not available for allReduce: expected one of ring, recursive_doubling, direct, hierarchical, tree, one_shot/,
  );
  assert.throws(() => parseAlgorithmOverrides('ring'), /must be <collective>:<algorithm>/);
});

/** Thread ranks on a 2-core machine with the default profile, as the communicator hands them to the tuner. */
function machine(nranks: number): TopologyGraph {
  const detection = fakeDetection(2);
  return new TopologyGraph(
    parseTopology(
      localTopology({ ranks: nranks, transport: 'shm', profile: defaultProfile(2, 'h'), detection }),
      'local',
    ),
  );
}

/** What the communicator asks for a call of `bytes` (the root's input) on `nranks` thread ranks. */
function threadCall(collective: Collective, nranks: number, bytes: number, algorithm?: string, inPlace = false) {
  const count = callCount(collective, bytes, 4, nranks);
  const oneShot = oneShotOffer({ collective, nranks, count, root: 0, inPlace, chunkCount: 0 }, 4, 65536);
  return selectAlgorithm({
    inPlace,
    collective,
    nranks,
    bytes,
    elementBytes: 4,
    hostCount: 1,
    transport: 'shm',
    oversubscribed: nranks > 2,
    oneShot,
    machine: machine(nranks),
    ...(algorithm ? { algorithm } : {}),
  });
}

test('on thread ranks the cost model picks: the one-shot path for small calls, schedules that split the work for large ones', () => {
  for (const nranks of [2, 4, 8]) {
    for (const collective of ['allReduce', 'allGather', 'reduceScatter', 'broadcast'] as const) {
      assert.deepEqual(
        [threadCall(collective, nranks, 64).algorithm, threadCall(collective, nranks, 64).protocol],
        ['one_shot', 'll'],
        `${collective} ${nranks} ranks`,
      );
      const large = threadCall(collective, nranks, 16 << 20);
      assert.equal(large.protocol, 'simple');
      // Recursive doubling moves the whole buffer log2(n) times: never the pick for a large call on more than 2 ranks.
      if (nranks > 2) assert.notEqual(large.algorithm, 'recursive_doubling', `${collective} ${nranks} ranks`);
    }
  }
  // Reading every peer's whole message costs a direct all-gather nothing extra, so it wins on many ranks.
  assert.equal(threadCall('allGather', 4, 8 << 20).algorithm, 'direct');
  assert.equal(threadCall('broadcast', 4, 8 << 20).algorithm, 'direct');
  // A message the slots cannot hold is never offered to the one-shot path.
  assert.equal(threadCall('allReduce', 2, 128 << 10).protocol, 'simple');
  // Forced choices are obeyed, and checked.
  assert.equal(threadCall('allReduce', 4, 8, 'ring').protocol, 'simple');
  assert.equal(threadCall('allReduce', 2, 32 << 10, 'one_shot').protocol, 'll');
  assert.throws(
    () => threadCall('allReduce', 4, 1 << 20, 'one_shot'),
    /at most 65536 bytes; this allReduce has 1048576/,
  );
  // Without a low-latency path, never; forcing it then says why.
  assert.equal(selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4 }).protocol, 'simple');
  assert.throws(
    () => selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes: 8, elementBytes: 4, algorithm: 'one_shot' }),
    /'one_shot' needs a transport with a low-latency path/,
  );
  assert.equal(parseAlgorithmOverrides('allreduce:one_shot').get('allReduce'), 'one_shot');
});

test('process ranks over TCP on one host take the one-shot path where every rank needs every peer: 2-rank all-reduce, all-gather, reduce-scatter', () => {
  const tcpCall = (collective: Collective, nranks: number, bytes: number, hostCount = 1) =>
    selectAlgorithm({
      collective,
      nranks,
      bytes,
      elementBytes: 4,
      hostCount,
      transport: 'tcp',
      oneShot: oneShotOffer({ collective, nranks, count: bytes / 4, root: 0, inPlace: false, chunkCount: 0 }, 4, 4096),
    });
  assert.deepEqual(tcpCall('allReduce', 2, 8), {
    algorithm: 'one_shot',
    chunkCount: tcpCall('allReduce', 2, 8).chunkCount,
    protocol: 'll',
  });
  assert.equal(tcpCall('allGather', 4, 1024).algorithm, 'one_shot');
  assert.equal(tcpCall('reduceScatter', 2, 512).algorithm, 'one_shot');
  // Recursive doubling's two rounds beat three frames each on 4 ranks; a broadcast's peers would wait for each other.
  assert.equal(tcpCall('allReduce', 4, 8).algorithm, 'recursive_doubling');
  assert.equal(tcpCall('broadcast', 2, 8).protocol, 'simple');
  // Too large for one frame (a reduce-scatter sends every block), or ranks on several hosts: the schedules.
  assert.equal(tcpCall('allReduce', 2, 4096).algorithm, 'one_shot');
  assert.equal(tcpCall('allReduce', 2, 8192).algorithm, 'recursive_doubling');
  assert.equal(tcpCall('reduceScatter', 4, 2048).protocol, 'simple');
  assert.equal(tcpCall('allGather', 4, 64, 2).protocol, 'simple');
});

test('the cost model follows the machine: cheap hand-offs favour the schedules, costly ones the one-shot path', () => {
  const detection = fakeDetection(8);
  const onMachine = (messageUs: number) => {
    const base = defaultProfile(8, 'h');
    const profile = { ...base, shm: { ...base.shm, messageUs, oneShotUs: 10 } };
    const graph = new TopologyGraph(
      parseTopology(localTopology({ ranks: 4, transport: 'shm', profile, detection }), 'local'),
    );
    const count = callCount('allReduce', 4096, 4, 4);
    const oneShot = oneShotOffer(
      { collective: 'allReduce', nranks: 4, count, root: 0, inPlace: false, chunkCount: 0 },
      4,
      65536,
    );
    return selectAlgorithm({
      collective: 'allReduce',
      nranks: 4,
      bytes: 4096,
      elementBytes: 4,
      hostCount: 1,
      transport: 'shm',
      oneShot,
      machine: graph,
    }).algorithm;
  };
  assert.notEqual(onMachine(0.1), 'one_shot');
  assert.equal(onMachine(20), 'one_shot');
});

test('a machine measured in two cache states gets the choice that loses least in either, and keeps its fastest where the states agree', () => {
  const detection = fakeDetection(2);
  const near = [
    { bytes: 64 << 10, nsPerByte: 0.005 },
    { bytes: 32 << 20, nsPerByte: 0.002 },
  ];
  const far = [
    { bytes: 64 << 10, nsPerByte: 0.12 },
    { bytes: 32 << 20, nsPerByte: 0.05 },
  ];
  const pick = (worst: typeof far | undefined, bytes: number) => {
    const base = defaultProfile(2, 'h');
    const profile = {
      ...base,
      shm: { ...base.shm, invalidationTiers: near, ...(worst === undefined ? {} : { worstInvalidationTiers: worst }) },
    };
    const graph = new TopologyGraph(
      parseTopology(localTopology({ ranks: 2, transport: 'shm', profile, detection }), 'local'),
    );
    return selectAlgorithm({
      collective: 'allReduce',
      nranks: 2,
      bytes,
      elementBytes: 4,
      hostCount: 1,
      transport: 'shm',
      machine: graph,
    }).algorithm;
  };
  // Ring reads its peer's fresh half and overwrites the half its peer read: cheap in the near
  // state, where the model puts it ahead; recursive doubling reads only inputs, the same in both.
  assert.equal(pick(undefined, 2 << 20), 'ring');
  assert.equal(pick(far, 2 << 20), 'recursive_doubling');
  // The same state twice changes nothing.
  assert.equal(pick(near, 2 << 20), 'ring');
});

test('thread ranks take whole pieces when they outnumber the cores; process ranks follow the measured rules', () => {
  // Over a network the sender's link would carry n-1 copies; on one host loopback is not that bottleneck.
  const overNetwork = (collective: 'allGather' | 'broadcast', bytes: number, hostCount: number) =>
    selectAlgorithm({ collective, nranks: 4, bytes, elementBytes: 4, transport: 'tcp', hostCount }).algorithm;
  assert.equal(overNetwork('allGather', 8 << 20, 4), 'ring');
  assert.equal(overNetwork('broadcast', 8 << 20, 4), 'binomial_tree');
  // On one host: all-gathers direct at every size, broadcasts by the tree but for small ones and 16 MiB.
  for (const bytes of [64, 64 << 10, 512 << 10, 4 << 20, 16 << 20])
    assert.equal(overNetwork('allGather', bytes, 1), 'direct');
  assert.equal(overNetwork('broadcast', 8, 1), 'ring', 'a chain: each process sends one small message');
  assert.equal(overNetwork('broadcast', 4096, 1), 'ring');
  assert.equal(
    selectAlgorithm({ collective: 'broadcast', nranks: 8, bytes: 8, elementBytes: 4, transport: 'tcp', hostCount: 1 })
      .algorithm,
    'binomial_tree',
  );
  assert.equal(overNetwork('broadcast', 32 << 10, 1), 'binomial_tree');
  assert.equal(overNetwork('broadcast', 2 << 20, 1), 'binomial_tree');
  assert.equal(overNetwork('broadcast', 16 << 20, 1), 'direct', 'direct ahead at 16 MiB in the last three grids');
  // Between 2 processes there is no one to relay to (a broadcast's tree only copies the root's output first).
  const twoOnHost = (collective: 'allGather' | 'broadcast', bytes: number) =>
    selectAlgorithm({ collective, nranks: 2, bytes, elementBytes: 4, transport: 'tcp', hostCount: 1 }).algorithm;
  assert.equal(twoOnHost('allGather', 512 << 10), 'direct');
  for (const bytes of [8, 32 << 10, 2 << 20, 16 << 20]) assert.equal(twoOnHost('broadcast', bytes), 'direct');
  const fourProcesses = (bytes: number) =>
    selectAlgorithm({ collective: 'allReduce', nranks: 4, bytes, elementBytes: 4, transport: 'tcp' }).algorithm;
  assert.equal(fourProcesses(4096), 'recursive_doubling');
  assert.equal(fourProcesses(8192), 'tree', 'the processes share the cores: the fewest messages and reductions win');
  assert.equal(fourProcesses(512 << 10), 'tree');
  assert.equal(fourProcesses(1 << 20), 'direct');
  assert.equal(
    selectAlgorithm({
      collective: 'allReduce',
      nranks: 4,
      bytes: 32 << 10,
      elementBytes: 4,
      transport: 'tcp',
      hostCount: 4,
    }).algorithm,
    'recursive_doubling',
  );
  assert.equal(fourProcesses(16 << 20), 'direct');
  const twoProcesses = (bytes: number) =>
    selectAlgorithm({ collective: 'allReduce', nranks: 2, bytes, elementBytes: 4, transport: 'tcp' }).algorithm;
  assert.equal(twoProcesses(2 << 20), 'recursive_doubling');
  assert.equal(twoProcesses(4 << 20), 'direct');
  const chunk = (oversubscribed: boolean) =>
    selectAlgorithm({
      collective: 'allReduce',
      nranks: 4,
      bytes: 64 << 20,
      elementBytes: 4,
      transport: 'shm',
      oversubscribed,
    }).chunkCount;
  assert.ok(chunk(true) > chunk(false), `oversubscribed pieces ${chunk(true)} should exceed ${chunk(false)}`);
  // All-reduces of 2 processes over TCP stream smaller pieces than thread ranks or more processes.
  const tcpChunk = (nranks: number) =>
    selectAlgorithm({ collective: 'allReduce', nranks, bytes: 64 << 20, elementBytes: 4, transport: 'tcp' }).chunkCount;
  assert.ok(
    tcpChunk(2) < tcpChunk(4) && tcpChunk(4) === chunk(false),
    `2-process pieces ${tcpChunk(2)}, 4-process ${tcpChunk(4)}, threads ${chunk(false)}`,
  );
});

test('an in-place call is ranked with its in-place schedules', () => {
  // 2 thread ranks, 4 MiB: recursive doubling is one exchange of the whole buffer, but in place
  // its result lands in scratch and is copied back over what the peer has just read.
  assert.equal(threadCall('allReduce', 2, 4 << 20).algorithm, 'recursive_doubling');
  assert.notEqual(threadCall('allReduce', 2, 4 << 20, undefined, true).algorithm, 'recursive_doubling');
  // 16 KiB: in place the one-shot path copies into its slot (a reduction cannot be read by
  // reference where it is written), which still beats the exchange.
  assert.equal(threadCall('allReduce', 2, 16 << 10, undefined, true).algorithm, 'one_shot');
  // A collective whose schedules run the same steps in place takes the out-of-place ranking.
  for (const bytes of [64, 64 << 10, 4 << 20])
    assert.deepEqual(
      threadCall('reduceScatter', 4, bytes, undefined, true),
      threadCall('reduceScatter', 4, bytes),
      `${bytes}`,
    );
});

test('the size classes a communicator prepares are the choices its calls would make, and its calls then run no simulation', () => {
  const prepared = machine(4);
  const fresh = machine(4);
  const capacity = 4096;
  prepareChoices(prepared, { nranks: 4, transport: 'shm', oversubscribed: true, oneShotCapacity: capacity });
  for (const collective of ['allReduce', 'broadcast', 'allGather', 'reduceScatter', 'allToAll'] as const) {
    for (const [elementBytes, inPlace] of [1, 2, 4, 8].flatMap((e) => [[e, false] as const, [e, true] as const])) {
      for (let bytes = elementBytes; bytes <= 2 ** 34; bytes *= 8) {
        const count =
          collective === 'reduceScatter' || collective === 'allToAll' ? bytes / elementBytes / 4 : bytes / elementBytes;
        const shape = {
          collective,
          nranks: 4,
          count: Math.max(1, Math.floor(count)),
          root: 0,
          inPlace,
          chunkCount: 0,
        };
        const request = {
          collective,
          inPlace,
          nranks: 4,
          bytes: bytes + elementBytes,
          elementBytes,
          transport: 'shm',
          oversubscribed: true,
          oneShot: oneShotOffer(shape, elementBytes, capacity),
        } as const;
        const before = classesRankedOnDemand();
        const chosen = selectAlgorithm({ ...request, machine: prepared });
        assert.equal(
          classesRankedOnDemand(),
          before,
          `${collective} of ${bytes} bytes in ${elementBytes}-byte elements${inPlace ? ' in place' : ''} ran the cost model`,
        );
        assert.deepEqual(chosen, selectAlgorithm({ ...request, machine: fresh }), `${collective} ${bytes} ${inPlace}`);
      }
    }
  }
  // The counter does count: an unprepared machine ranks on the call.
  const before = classesRankedOnDemand();
  selectAlgorithm({
    collective: 'allReduce',
    nranks: 4,
    bytes: 3 << 20,
    elementBytes: 2,
    transport: 'shm',
    machine: machine(4),
  });
  assert.equal(classesRankedOnDemand(), before + 1);
});

test('a table ranked by one thread is adopted by another only for the same machine, and then spares it every simulation', () => {
  const ranked = machine(4);
  prepareChoices(ranked, { nranks: 4, transport: 'shm', oversubscribed: true, oneShotCapacity: 4096 });
  const table = choiceTable(ranked);
  assert.equal(adoptChoices(machine(2), table), false, 'a table of another machine was adopted');
  const adopter = machine(4);
  assert.equal(adoptChoices(adopter, table), true);
  const before = classesRankedOnDemand();
  for (const bytes of [8, 5000, 3 << 20, 2 ** 33])
    selectAlgorithm({
      collective: 'allReduce',
      nranks: 4,
      bytes,
      elementBytes: 2,
      transport: 'shm',
      oversubscribed: true,
      machine: adopter,
    });
  assert.equal(classesRankedOnDemand(), before);
});
