// One rank of bench/train/ddp.mjs: a small GPT trained data-parallel; medians of the timed steps.
import { init } from '../../dist/src/progress/init.js';
import {
  DataParallel,
  StepTrace,
  TextCorpus,
  createGpt,
  generateText,
  loadTf,
  parameterCount,
  writeModelSpec,
  writeTrace,
} from '../../dist/src/train/index.js';

export default async function main({ args }) {
  const { progress, steps, warm, dim, layers, seqLen, rowsPerRank, bucketMb, backend, specPath, tracePath } =
    JSON.parse(args[0]);
  const tf = await loadTf({ backend });
  const comm = await init({ progress, timeoutMs: 600_000 });
  const corpus = new TextCorpus(generateText(100_000));
  const model = createGpt(tf, { vocabSize: corpus.vocabSize, seqLen, dim, heads: 4, layers });
  const ddp = new DataParallel(comm, model, { optimizer: tf.train.adam(1e-3), bucketCapMb: bucketMb });
  await ddp.broadcastParameters();
  // The timed synchronised steps, for `tsccl sim train --trace`.
  const trace = tracePath ? new StepTrace(comm.rank, { dp: comm }) : undefined;
  if (specPath && comm.rank === 0) await writeModelSpec(model, specPath, `gpt dim ${dim} x ${layers}`);
  // Synchronised steps alternate with steps without communication (no_sync: forward, backward,
  // no update), so that drift in the machine's speed falls on both alike.
  const reports = [];
  const noSync = [];
  for (let step = 0; step < warm + steps; step++) {
    for (const sync of [true, false]) {
      const batch = corpus.batch(step, {
        batchSize: rowsPerRank * comm.size,
        seqLen,
        rank: comm.rank,
        ranks: comm.size,
      });
      const started = performance.now();
      const report = await ddp.step(batch, { sync, trace: sync && step >= warm ? trace : undefined });
      const stepMs = performance.now() - started;
      if (step < warm) continue;
      // When backward's compute ended and when its wait for the gradients did (epoch ms).
      const computeEnd = performance.timeOrigin + started + report.forwardMs + report.backwardMs;
      if (sync) reports.push({ ...report, stepMs, waitSpan: [computeEnd, computeEnd + report.exposedCommMs] });
      else noSync.push(stepMs);
    }
  }
  // One all-reduce of every gradient at once, as the simulator prices the step's reduction, after a barrier each.
  const whole = comm.alloc('float32', parameterCount(model));
  const lone = [];
  for (let i = 0; i < (specPath ? 20 : 0); i++) {
    await comm.barrier();
    const started = performance.now();
    await comm.allReduce(whole, { op: 'sum' });
    lone.push(performance.now() - started);
  }
  comm.free(whole);
  if (trace) await writeTrace(comm, trace, tracePath);
  const median = (key) => reports.map((r) => r[key]).sort((a, b) => a - b)[reports.length >> 1];
  const result = {
    params: parameterCount(model),
    buckets: reports[0].buckets,
    wireBytes: reports[0].wireBytes,
    forwardMs: median('forwardMs'),
    backwardMs: median('backwardMs'),
    exposedCommMs: median('exposedCommMs'),
    optimizerMs: median('optimizerMs'),
    stepMs: median('stepMs'),
    noSyncStepMs: noSync.sort((a, b) => a - b)[noSync.length >> 1],
    vocab: corpus.vocabSize,
    waitSpans: reports.map((r) => r.waitSpan),
    loneAllReduceMs: lone.length > 0 ? lone.sort((a, b) => a - b)[lone.length >> 1] : undefined,
  };
  ddp.dispose();
  await comm.destroy();
  return result;
}
