// A data-parallel loop that loses a rank and carries on with the survivors.
//   npx tsccl run -n 4 examples/elastic-dp.mjs                    (thread ranks)
//   npx tsccl launch --nproc-per-node 4 examples/elastic-dp.mjs   (process ranks)
// The last rank "crashes" before step 3. The others see TSCCL_ERR_PEER_LOST naming it,
// shrink the communicator to the survivors and redo the step. The launcher still reports
// the crashed rank when the job ends, as it should.
import { init } from 'tsccl';

let comm = await init({ timeoutMs: 10_000 });
const me = comm.rank;
const victim = comm.size - 1;
const weights = new Float32Array(1024);

for (let step = 0; step < 6; step++) {
  if (step === 3 && me === victim) process.exit(1);
  const gradient = new Float32Array(weights.length).fill(me + 1); // stand-in for backward()
  try {
    await comm.allReduce(gradient, { op: 'avg' });
  } catch (err) {
    if (err.code !== 'TSCCL_ERR_PEER_LOST') throw err;
    const lost = err.details.origin ?? err.details.peer;
    console.log(`rank ${me}: lost rank ${lost} in step ${step}; going on without it`);
    comm = await comm.shrink({ exclude: [lost] });
    step--; // redo the step
    continue;
  }
  for (let i = 0; i < weights.length; i++) weights[i] -= 0.1 * gradient[i];
  console.log(`rank ${me}: step ${step} on ${comm.size} ranks, mean gradient ${gradient[0]}`);
}
