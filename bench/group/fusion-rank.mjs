// One rank of bench/group/fusion.mjs: `count` all-reduces of `bytes` each, on arrays from
// comm.alloc (the case where fusing costs copies that the calls alone would not make), issued
// together and as one comm.group; for each size, rank 0's median of the rounds, ms.
import { init } from '../../dist/src/progress/init.js';
import { medianOfRounds } from '../lib/timed-rounds.mjs';

export default async function main({ args }) {
  const { sizes, totalBytes, rounds, maxCount } = JSON.parse(args[0]);
  const comm = await init({ timeoutMs: 600_000 });
  const rows = [];
  for (const bytes of sizes) {
    const count = Math.max(2, Math.min(maxCount, Math.floor(totalBytes / bytes)));
    const tensors = Array.from({ length: count }, () => comm.alloc('float32', bytes / 4).fill(1));
    const ways = {
      together: () => Promise.all(tensors.map((t) => comm.allReduce(t))),
      group: () =>
        comm.group((g) => {
          for (const t of tensors) g.allReduce(t);
        }),
    };
    const ms = {};
    for (const [name, way] of Object.entries(ways)) {
      await way();
      ms[name] = await medianOfRounds(comm, way, rounds);
    }
    for (const t of tensors) comm.free(t);
    rows.push({ bytes, count, ...ms });
  }
  await comm.destroy();
  return rows;
}
