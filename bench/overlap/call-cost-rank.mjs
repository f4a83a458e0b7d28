// One rank of bench/overlap/call-cost.mjs: the time per call of back-to-back small all-reduces.
import { init } from '../../dist/src/progress/init.js';

export default async function main({ args }) {
  const { progress, bytes, calls, memory = 'alloc' } = JSON.parse(args[0]);
  const comm =
    progress === 'inline' ? await init({ timeoutMs: 600_000 }) : await init({ progress, timeoutMs: 600_000 });
  const count = Math.max(1, bytes / 4);
  // 'plain': an ordinary array, which an engine stages (copied into the arena and back per call).
  const buffer = memory === 'plain' ? new Float32Array(count) : comm.alloc('float32', count);
  for (let i = 0; i < 200; i++) await comm.allReduce(buffer);
  const perCall = [];
  for (let round = 0; round < 5; round++) {
    await comm.barrier();
    const start = performance.now();
    for (let i = 0; i < calls; i++) await comm.allReduce(buffer);
    perCall.push(((performance.now() - start) * 1000) / calls);
  }
  // Under 'auto', where the tuner ran these calls and the hand-off it priced.
  const path = comm.progressOf?.('allReduce', buffer.byteLength) ?? progress;
  const handOffUs = comm.handOffUs;
  await comm.destroy();
  return { us: perCall.sort((a, b) => a - b)[2], path, handOffUs };
}
