// One rank of bench/train/tensor-parallel.mjs: a GPT split across the world's ranks (Megatron-style
// tensor parallelism), trained data-parallel over nothing else; medians of the timed steps.
import { init } from '../../dist/src/progress/init.js';
import {
  DataParallel,
  TextCorpus,
  createGpt,
  generateText,
  loadTf,
  parallelGroups,
} from '../../dist/src/train/index.js';

export default async function main({ args }) {
  const { progress, steps, warm, dim, layers, seqLen, batchSize } = JSON.parse(args[0]);
  const tf = await loadTf();
  const world =
    progress === 'inline' ? await init({ timeoutMs: 600_000 }) : await init({ progress, timeoutMs: 600_000 });
  const groups = await parallelGroups(world, { tensor: world.size, pipeline: 1 });
  const corpus = new TextCorpus(generateText(100_000));
  const model = createGpt(tf, {
    vocabSize: corpus.vocabSize,
    seqLen,
    dim,
    heads: 4,
    layers,
    tensorParallel: groups.tensor,
  });
  const trainer = new DataParallel(groups.data, model, { optimizer: tf.train.adam(1e-3) });
  await trainer.broadcastParameters();
  const stepMs = [];
  for (let step = 0; step < warm + steps; step++) {
    const started = performance.now();
    await trainer.step(corpus.batch(step, { batchSize, seqLen }));
    if (step >= warm) stepMs.push(performance.now() - started);
  }
  // Where 'auto' ran the block's activation all-reduce (rows x seq x dim floats) and a loss's one float.
  const activationBytes = batchSize * seqLen * dim * 4;
  const paths = world.progressOf
    ? `activations ${world.progressOf('allReduce', activationBytes)}, a float ${world.progressOf('allReduce', 4)}`
    : '';
  const handOffUs = world.handOffUs;
  await world.destroy();
  return { stepMs: stepMs.sort((a, b) => a - b)[stepMs.length >> 1], paths, handOffUs };
}
