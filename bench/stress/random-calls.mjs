#!/usr/bin/env node
// Correctness soak, not a benchmark: every rank draws the same calls from a seeded generator
// (collective, dtype, reduction, size up to 2^maxLog2 bytes, in place or not, registered or plain
// memory, algorithm or the tuner's pick, root; collectives and send/recv), issues them in batches of 1-4 without awaiting
// each (they queue on the communicator), on the world and on a split half-communicator at once,
// and checks every result on every rank against the plain reference.
// As ranks:  tsccl run -n 4 bench/stress/random-calls.mjs [calls=300] [seed=1] [maxLog2=22]
//            tsccl launch --nproc-per-node 3 [--threads-per-proc 2] bench/stress/random-calls.mjs ...
// Over two "hosts" (network namespaces, needs root and iproute2), as bench/stress/netns-reduce-scatter.mjs:
//            node bench/stress/random-calls.mjs --netns [rate=100mbit] [procs=2] [threads=1] [calls] [seed] [maxLog2]
// Found: a peer's goodbye on one socket overtaking a striped message on another (58429cd).
import { fileURLToPath } from 'node:url';
import { init } from '../../dist/src/comm/init.js';
import { dtypeInfo } from '../../dist/src/dtypes/dtype.js';
import { firstDifference, makeData, referenceReduce } from '../../dist/src/bench/pattern.js';
import { createNetnsPair, netnsUnavailable, tscclInNamespace } from '../../dist/test/harness/netns.js';

const DTYPES = ['float32', 'float64', 'int32', 'int8', 'uint8', 'float16', 'bfloat16', 'int64'];
const ALGORITHMS = {
  allReduce: [undefined, 'ring', 'recursive_doubling', 'direct'],
  allGather: [undefined, 'ring', 'direct'],
  reduceScatter: [undefined, 'ring'],
  broadcast: [undefined, 'direct', 'binomial_tree'],
  reduce: [undefined],
  allToAll: [undefined],
  gather: [undefined],
  scatter: [undefined],
  sendRecv: [undefined],
};

/** xorshift32: the same sequence on every rank. */
function generator(seed) {
  let state = seed >>> 0 || 1;
  const next = () => { state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0; return state / 2 ** 32; };
  return { next, pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

/** Starts one drawn call on `comm`; resolves to [got, want], or undefined where this rank gets no result. */
function drawCall(comm, rng, salt, maxLog2) {
  const n = comm.size;
  const me = comm.rank;
  const collective = rng.pick(Object.keys(ALGORITHMS));
  const dtype = rng.pick(DTYPES);
  const info = dtypeInfo(dtype);
  const count = Math.max(1, Math.floor(2 ** (rng.next() * maxLog2) / info.bytes));
  const op = rng.pick(info.isFloat ? ['sum', 'prod', 'min', 'max', 'avg'] : ['sum', 'prod', 'min', 'max']);
  const inPlace = rng.next() < 0.5;
  const registered = rng.next() < 0.5;
  const algorithm = rng.pick(ALGORITHMS[collective]);
  const root = Math.floor(rng.next() * n);
  const place = (data) => { if (!registered) return data; const x = comm.alloc(dtype, data.length); x.set(data); return x; };
  const fresh = (length) => place(new info.ctor(length));
  const inputs = (length, reduction = op) => Array.from({ length: n }, (_, r) => makeData(dtype, reduction, r, length, salt));
  const label = `call ${salt} on ${comm.name}: ${collective} ${dtype} ${op} count=${count} ${inPlace ? 'in place' : 'out of place'} ${registered ? 'registered' : 'plain'} ${algorithm ?? 'tuned'} root=${root}`;
  const output = inPlace ? undefined : fresh(['allGather', 'allToAll', 'gather'].includes(collective) ? n * count : count);
  let run;
  if (collective === 'allReduce' || collective === 'reduce') {
    const all = inputs(count);
    const buf = place(all[me]);
    const want = me === root || collective === 'allReduce' ? referenceReduce(dtype, op, all) : undefined;
    run = comm[collective](buf, { op, output, algorithm, dtype, root }).then(() => want && [output ?? buf, want]);
  } else if (collective === 'reduceScatter') {
    const all = inputs(n * count);
    const buf = place(all[me]);
    const want = referenceReduce(dtype, op, all).subarray(me * count, (me + 1) * count);
    run = comm.reduceScatter(buf, { op, output, algorithm, dtype }).then(() => [output ?? buf.subarray(me * count, (me + 1) * count), want]);
  } else if (collective === 'allGather') {
    const all = inputs(count, 'sum');
    const want = new info.ctor(n * count);
    all.forEach((a, r) => want.set(a, r * count));
    const buf = inPlace ? fresh(n * count) : place(all[me]);
    if (inPlace) buf.set(all[me], me * count);
    run = comm.allGather(buf, { output, algorithm, dtype }).then(() => [output ?? buf, want]);
  } else if (collective === 'allToAll') {
    const all = inputs(n * count, 'sum');
    const want = new info.ctor(n * count);
    all.forEach((a, r) => want.set(a.subarray(me * count, (me + 1) * count), r * count));
    const buf = place(all[me]);
    run = comm.allToAll(buf, { output, dtype }).then(() => [output ?? buf, want]);
  } else if (collective === 'gather') {
    const all = inputs(count, 'sum');
    const want = new info.ctor(n * count);
    all.forEach((a, r) => want.set(a, r * count));
    const inPlaceRoot = inPlace && me === root;
    const buf = inPlaceRoot ? fresh(n * count) : place(all[me]);
    if (inPlaceRoot) buf.set(all[me], me * count);
    run = comm.gather(buf, { root, output: me === root ? output : undefined, dtype }).then(() => me === root ? [output ?? buf, want] : undefined);
  } else if (collective === 'scatter') {
    const all = makeData(dtype, 'sum', root, n * count, salt);
    const want = all.subarray(me * count, (me + 1) * count);
    const buf = me === root ? place(all) : fresh(count);
    const got = me === root ? (inPlace ? buf.subarray(me * count, (me + 1) * count) : output) : buf;
    run = comm.scatter(buf, { root, output: me === root && !inPlace ? output : undefined, dtype }).then(() => [got, want]);
  } else if (collective === 'sendRecv') {
    // A ring exchange, send and receive together (send resolves when the peer has received).
    const mine = makeData(dtype, 'sum', me, count, salt);
    const got = fresh(count);
    run = Promise.all([comm.send(place(mine), (me + 1) % n), comm.recv(got, (me + n - 1) % n)])
      .then(() => [got, makeData(dtype, 'sum', (me + n - 1) % n, count, salt)]);
  } else {
    const data = makeData(dtype, 'sum', root, count, salt);
    const buf = me === root ? place(data) : fresh(count);
    run = comm.broadcast(buf, { root, output, algorithm, dtype }).then(() => [output ?? buf, data]);
  }
  return { label, run };
}

/** One rank: `calls` calls on the world and as many on a half of it, both at once; throws if any went wrong. */
export default async function randomCallsRank({ args }) {
  const [calls = 300, seed = 1, maxLog2 = 22] = args.map(Number);
  const world = await init({ timeoutMs: 120000 });
  const half = await world.split({ color: world.rank % 2, key: world.rank });
  const failures = [];
  const soak = async (comm, rng) => {
    for (let salt = 0; salt < calls;) {
      const batch = [];
      for (let b = 1 + Math.floor(rng.next() * 4); b > 0 && salt < calls; b--, salt++) {
        const { label, run } = drawCall(comm, rng, salt, maxLog2);
        batch.push(run.then((result) => {
          const at = result === undefined ? -1 : firstDifference(result[0], result[1]);
          if (at >= 0) failures.push(`rank ${world.rank}: ${label}: element ${at} is ${result[0][at]}, expected ${result[1][at]}`);
        }, (err) => failures.push(`rank ${world.rank}: ${label}: ${err.code ?? ''} ${err.message}`)));
      }
      await Promise.all(batch);
    }
  };
  // The half's generator differs by color, so its two groups run different calls.
  await Promise.all([soak(world, generator(seed)), half.size > 1 ? soak(half, generator(seed * 31 + 1 + (world.rank % 2))) : undefined]);
  console.log(`rank ${world.rank}: ${failures.length} wrong of ${half.size > 1 ? 2 * calls : calls} calls${failures.map((f) => `\n  ${f}`).join('')}`);
  await half.destroy();
  await world.destroy();
  if (failures.length > 0) throw new Error(`rank ${world.rank}: ${failures.length} calls wrong`);
}

// Run directly with --netns (not as a rank, which the launcher gives a RANK): two hosts, then launch.
if (process.env.RANK === undefined && process.argv[2] === '--netns') {
  const [rate = '100mbit', procs = '2', threads = '1', ...rest] = process.argv.slice(3);
  const why = netnsUnavailable();
  if (why) { console.error(`random-calls: ${why}`); process.exit(2); }
  const pair = createNetnsPair('r', rate);
  const node = (i) => tscclInNamespace(pair.names[i], ['launch', '--nnodes', '2', '--node-rank', String(i), '--nproc-per-node', procs, '--threads-per-proc', threads,
    '--master-addr', pair.addresses[0], '--master-port', '29592', fileURLToPath(import.meta.url), ...rest], { ...process.env, TSCCL_JOB_TOKEN: 'random-calls' }, { echo: true });
  try {
    const nodes = await Promise.all([node(0), node(1)]);
    process.exitCode = nodes.every((n) => n.code === 0) ? 0 : 1;
  } finally {
    pair.close();
  }
}
