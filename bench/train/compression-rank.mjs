// One rank of bench/train/compression.mjs: the small GPT trained data-parallel for `steps` steps
// with the gradient buckets sent as `compression` says (none, or a format, with or without error
// feedback), from the same seed; returns the loss of every step and the bytes of one update.
import { init } from '../../dist/src/comm/init.js';
import { DataParallel, TextCorpus, createGpt, generateText, loadTf } from '../../dist/src/train/index.js';

export default async function main({ args }) {
  const { steps, compression, errorFeedback } = JSON.parse(args[0]);
  const tf = await loadTf();
  const comm = await init({ timeoutMs: 600_000 });
  const corpus = new TextCorpus(generateText(200_000));
  const model = createGpt(tf, { vocabSize: corpus.vocabSize, seqLen: 32, dim: 64, heads: 4, layers: 2, seed: 7 });
  const ddp = new DataParallel(comm, model, {
    optimizer: tf.train.adam(3e-3),
    ...(compression === 'none' ? {} : { compression, errorFeedback }),
  });
  await ddp.broadcastParameters();
  const losses = [];
  for (let step = 0; step < steps; step++) {
    const batch = corpus.batch(step, { batchSize: 16, seqLen: 32, rank: comm.rank, ranks: comm.size });
    losses.push((await ddp.step(batch)).loss);
  }
  const records = comm.flightRecords().records.filter((r) => r.op === 'allReduce' && r.count > 1);
  const last = records.at(-1);
  ddp.dispose();
  await comm.destroy();
  return { losses, wireBytes: last?.wireBytes ?? (last ? last.count * 4 : 0) };
}
