// Data-parallel training of a small GPT on generated text, gradients averaged by tsccl.
//   npx tsccl run -n 4 examples/train-ddp.mjs                      (thread ranks)
//   npx tsccl launch --nproc-per-node 2 examples/train-ddp.mjs     (process ranks over TCP)
// TRACE=trace.json also writes a Chrome / Perfetto trace of every step (ui.perfetto.dev).
// Every rank trains on its quarter of each global batch; a progress engine all-reduces the last
// layers' gradients while the first layers are still in backward. Needs the optional peer
// dependencies: npm install @tensorflow/tfjs@4 @tensorflow/tfjs-backend-wasm@4
import { init } from 'tsccl';
import { DataParallel, StepTrace, TextCorpus, createGpt, generateText, loadTf, writeTrace } from 'tsccl/train';

const steps = Number(process.env.STEPS ?? 60);
const tf = await loadTf();
const comm = await init({ progress: 'engine' });
const corpus = new TextCorpus(generateText(200_000));
const model = createGpt(tf, { vocabSize: corpus.vocabSize, seqLen: 32, dim: 64, heads: 4, layers: 2 });
const ddp = new DataParallel(comm, model, { optimizer: tf.train.adam(3e-3) });
await ddp.broadcastParameters();
const trace = process.env.TRACE ? new StepTrace(comm.rank, { data: comm }) : undefined;

for (let step = 0; step < steps; step++) {
  const batch = corpus.batch(step, { batchSize: 16, seqLen: 32, rank: comm.rank, ranks: comm.size });
  const report = await ddp.step(batch, { trace });
  if (comm.rank === 0 && (step % 10 === 0 || step === steps - 1)) {
    const ms = (x) => x.toFixed(0).padStart(4);
    console.log(
      `step ${step} loss ${report.loss.toFixed(3)}  forward ${ms(report.forwardMs)} ms  backward ${ms(report.backwardMs)} ms  exposed communication ${ms(report.exposedCommMs)} ms`,
    );
  }
}
if (trace) await writeTrace(comm, trace, process.env.TRACE);
ddp.dispose();
await comm.destroy();
