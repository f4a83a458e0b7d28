// Where a small TCP call's time goes, layer by layer, in one job of 2 process ranks: the bare
// transport (send 8 B, receive 8 B, wait until delivered: what an all-reduce of 2 ranks moves),
// then the same all-reduce through the communicator, out of place and in place. The three take
// turns in blocks of `calls`, so a slow spell of the machine falls on all of them; per layer,
// the median of the blocks after the first two (warm-up). Compare with the bare Node exchange,
// bench/bounds/tcp-latency.mjs --poll, run in the same minutes.
// Usage: node bin/tsccl.js launch --nproc-per-node 2 bench/bounds/tcp-call-layers.mjs [calls=20000] [blocks=8]
import { init } from '../../dist/src/comm/init.js';
import { copyInto } from '../../dist/src/transport/transport.js';
import { median } from '../../dist/src/tune/median.js';

export default async function tcpCallLayers({ args }) {
  const [calls = 20000, blocks = 8] = args.map(Number);
  const comm = await init({ timeoutMs: 60000 });
  const transport = comm.backend.transport;
  if (comm.transportKind !== 'tcp' || comm.size !== 2)
    throw new Error('run it as 2 process ranks: tsccl launch --nproc-per-node 2 ...');
  const peer = 1 - comm.rank;
  const bytes = new Uint8Array(8).fill(1);
  const consume = copyInto(new Uint8Array(8));
  // The transport's own context: no deadline, nothing to check, as a call's would rarely need.
  const ctx = { spinMs: 0, spinYields: false, check() {}, sliceMs: () => 1000 };
  const x = new Float32Array(2).fill(1);
  const y = new Float32Array(2);
  const z = new Float32Array(2).fill(1);
  // A channel and sequence numbers no collective of this job uses.
  const channel = 77;
  let seq = 1 << 24;
  const layers = {
    transport: async () => {
      const tag = { seq: ++seq, opcode: 0 };
      const handle = await transport.send(peer, channel, bytes, tag, ctx);
      await transport.recv(peer, channel, 8, 1, tag, consume, ctx);
      if (!transport.isDelivered(handle)) await transport.waitDelivered(handle, ctx);
    },
    'all-reduce out of place': () => comm.allReduce(x, { output: y }),
    'all-reduce in place': () => comm.allReduce(z),
  };
  const times = Object.fromEntries(Object.keys(layers).map((name) => [name, []]));
  for (let block = 0; block < blocks; block++) {
    for (const [name, call] of Object.entries(layers)) {
      await comm.barrier();
      const start = performance.now();
      for (let i = 0; i < calls; i++) await call();
      times[name].push(((performance.now() - start) * 1000) / calls);
    }
  }
  if (comm.rank === 0) {
    console.log(
      `# 8 B between 2 processes, us per call: median of blocks 3-${blocks} of ${calls} calls (every block in brackets)`,
    );
    for (const [name, ts] of Object.entries(times))
      console.log(`${name}: ${median(ts.slice(2)).toFixed(2)}  [${ts.map((t) => t.toFixed(1)).join(' ')}]`);
  }
  await comm.destroy();
}
