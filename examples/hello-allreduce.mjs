// Run with: npx tsccl run -n 4 examples/hello-allreduce.mjs
import { init } from 'tsccl';

const comm = await init();
const x = comm.alloc('float32', 1 << 20); // registered buffer in the shared arena
x.fill(comm.rank);
await comm.allReduce(x, { op: 'sum' }); // in place
const expected = (comm.size * (comm.size - 1)) / 2;
console.log(`rank ${comm.rank} of ${comm.size}: x[0] = ${x[0]} (expected ${expected})`);

// Tensor-parallel groups of two ranks, each with its own rank numbering.
const tp = await comm.split({ color: comm.rank >> 1, key: comm.rank });
const y = new Float64Array([comm.rank]);
await tp.allReduce(y, { op: 'max' });
console.log(`rank ${comm.rank}: tp group ${comm.rank >> 1} rank ${tp.rank}/${tp.size}, max rank in group = ${y[0]}`);
await tp.destroy();
await comm.destroy();
