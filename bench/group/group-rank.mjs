// One rank of bench/group/group.mjs: a model's gradients (200 tensors of 4-64 KiB) all-reduced
// one by one, all issued at once, and as one group.
import { init } from '../../dist/src/progress/init.js';
import { medianOfRounds } from '../lib/timed-rounds.mjs';

const SIZES_KIB = [4, 8, 16, 32, 64];

export default async function main({ args }) {
  const { tensors, rounds } = JSON.parse(args[0]);
  const comm = await init({ timeoutMs: 600_000 });
  const grads = Array.from({ length: tensors }, (_, i) =>
    new Float32Array((SIZES_KIB[i % SIZES_KIB.length] * 1024) / 4).fill(1),
  );
  const ways = {
    awaitedEach: async () => {
      for (const g of grads) await comm.allReduce(g);
    },
    issuedTogether: () => Promise.all(grads.map((g) => comm.allReduce(g))),
    group: () =>
      comm.group((g) => {
        for (const t of grads) g.allReduce(t);
      }),
  };
  for (const way of Object.values(ways)) await way();
  const ms = {};
  for (const [name, way] of Object.entries(ways)) ms[name] = await medianOfRounds(comm, way, rounds);
  await comm.destroy();
  return ms;
}
