// One rank of bench/train/pipeline.mjs: a GPT cut into as many stages as ranks; medians of the timed steps.
import { init } from '../../dist/src/progress/init.js';
import {
  PipelineParallel,
  StepTrace,
  TextCorpus,
  createGpt,
  generateText,
  loadTf,
  writeTrace,
} from '../../dist/src/train/index.js';

export default async function main({ args }) {
  const { schedule, microBatches, steps, warm, dim, layers, seqLen, batchSize, progress, tracePath } = JSON.parse(
    args[0],
  );
  const tf = await loadTf();
  const comm = await init({ progress, timeoutMs: 600_000 });
  const corpus = new TextCorpus(generateText(100_000));
  const model = createGpt(tf, { vocabSize: corpus.vocabSize, seqLen, dim, heads: 4, layers });
  const pipe = new PipelineParallel(comm, model, { optimizer: tf.train.adam(1e-3), microBatches, schedule });
  // The timed steps, for `tsccl sim train --trace`.
  const trace = tracePath ? new StepTrace(comm.rank, { pipeline: comm }) : undefined;
  const reports = [];
  for (let step = 0; step < warm + steps; step++) {
    const report = await pipe.step(corpus.batch(step, { batchSize, seqLen }), {
      trace: step >= warm ? trace : undefined,
    });
    if (step >= warm) reports.push(report);
  }
  const median = (key) => reports.map((r) => r[key]).sort((a, b) => a - b)[reports.length >> 1];
  if (trace) await writeTrace(comm, trace, tracePath);
  pipe.dispose();
  await comm.destroy();
  return { stepMs: median('stepMs'), waitMs: median('waitMs'), computeMs: median('forwardMs') + median('backwardMs') };
}
