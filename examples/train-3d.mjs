// A small GPT trained in 3D: 2 tensor-parallel ranks x 2 pipeline stages x 2 replicas = 8 ranks.
//   npx tsccl run -n 8 examples/train-3d.mjs
// Tensor-parallel ranks are consecutive (Megatron-LM's order), so on several hosts they share one;
// each attention and MLP layer is split over them. The layers are cut into 2 stages that pass
// activations forward and gradients back by send/recv in the 1F1B order; the 2 replicas average
// their gradients. The last stage prints each step's loss.
import { init } from 'tsccl';
import { PipelineParallel, TextCorpus, createGpt, generateText, loadTf, parallelGroups } from 'tsccl/train';

const steps = Number(process.env.STEPS ?? 40);
const tf = await loadTf();
// Progress engines move a sent activation while its stage computes the next micro-batch.
const world = await init({ progress: 'engine' });
const groups = await parallelGroups(world, { tensor: 2, pipeline: 2 });
const corpus = new TextCorpus(generateText(200_000));
const model = createGpt(tf, {
  vocabSize: corpus.vocabSize,
  seqLen: 32,
  dim: 64,
  heads: 4,
  layers: 2,
  tensorParallel: groups.tensor,
});
const pipeline = new PipelineParallel(groups.pipeline, model, {
  optimizer: tf.train.adam(3e-3),
  microBatches: 4,
  schedule: '1f1b',
  dataParallel: groups.data,
});
await pipeline.broadcastParameters();

for (let step = 0; step < steps; step++) {
  const batch = corpus.batch(step, { batchSize: 16, seqLen: 32, rank: groups.coords.data, ranks: groups.sizes.data });
  const report = await pipeline.step(batch);
  const printer = groups.coords.data === 0 && groups.coords.tensor === 0 && report.loss !== undefined;
  if (printer && (step % 10 === 0 || step === steps - 1)) {
    console.log(`step ${step} loss ${report.loss.toFixed(3)}  waited for neighbours ${report.waitMs.toFixed(0)} ms`);
  }
}
pipeline.dispose();
await world.destroy();
