import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ErrorCode, TscclError } from '../../src/errors.js';
import {
  DataParallel,
  PipelineParallel,
  SoloComm,
  TextCorpus,
  createGpt,
  evenStageLayers,
  generateText,
  loadTf,
  pipelineOrder,
} from '../../src/train/index.js';

const refused = (argument: string) => (err: unknown) =>
  err instanceof TscclError && err.code === ErrorCode.INVALID_ARGUMENT && err.details.argument === argument;

test('only tsccl/train imports TensorFlow.js: the core library loads without it', () => {
  const src = fileURLToPath(new URL('../../../src', import.meta.url));
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) =>
      statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : name.endsWith('.ts') ? [join(dir, name)] : [],
    );
  const importers = files(src).filter((f) =>
    /from '@tensorflow|import\('@tensorflow|import\(name\)/.test(readFileSync(f, 'utf8')),
  );
  assert.deepEqual(
    importers.filter((f) => !f.startsWith(join(src, 'train'))),
    [],
  );
  // Inside train/, only type imports but for load-tf.ts's dynamic import.
  for (const f of importers.filter((f) => f.startsWith(join(src, 'train')) && !f.endsWith('load-tf.ts'))) {
    assert.doesNotMatch(readFileSync(f, 'utf8'), /^import (?!type)[^;]*'@tensorflow/m, f);
  }
});

test('bad training input is refused with the argument named, before anything runs', async () => {
  await assert.rejects(loadTf({ backend: 'webgpu' as 'wasm' }), refused('backend'));
  const tf = await loadTf();
  assert.throws(() => createGpt(tf, { vocabSize: 10, seqLen: 8, dim: 30, heads: 4, layers: 1 }), refused('heads'));
  assert.throws(() => createGpt(tf, { vocabSize: 0, seqLen: 8, dim: 32, heads: 4, layers: 1 }), refused('vocabSize'));
  // Over tensor-parallel groups: 2 heads cannot split over 3 ranks; 10 tokens cannot over 4.
  const group = (size: number) => ({ rank: 0, size, allReduce: async () => {}, allGather: async () => {} });
  for (const [heads, size, argument] of [
    [2, 3, 'tensorParallel'],
    [4, 4, 'vocabSize'],
  ] as const)
    assert.throws(
      () => createGpt(tf, { vocabSize: 10, seqLen: 8, dim: 32, heads, layers: 1, tensorParallel: group(size) }),
      refused(argument),
    );
  const corpus = new TextCorpus(generateText(1000));
  assert.equal(corpus.decode(corpus.tokens.subarray(0, 20)), generateText(1000).slice(0, 20));
  assert.throws(() => corpus.batch(0, { batchSize: 6, seqLen: 8, rank: 0, ranks: 4 }), refused('batchSize'));
  assert.throws(() => corpus.batch(0, { batchSize: 8, seqLen: 8, rank: 4, ranks: 4 }), refused('rank'));
  assert.throws(() => corpus.batch(0, { batchSize: 8, seqLen: 5000 }), refused('seqLen'));
  const model = createGpt(tf, { vocabSize: corpus.vocabSize, seqLen: 8, dim: 16, heads: 2, layers: 1 });
  const solo = new SoloComm();
  assert.throws(() => new DataParallel(solo, model, {} as never), refused('optimizer'));
  const optimizer = tf.train.sgd(0.1);
  assert.throws(
    () => new DataParallel(solo, model, { optimizer, gradientHook: 'int3' as 'fp16' }),
    refused('gradientHook'),
  );
  assert.throws(() => new DataParallel(solo, model, { optimizer, bucketCapMb: 0 }), refused('bucketCapMb'));
  assert.throws(() => new PipelineParallel(solo, model, { optimizer, microBatches: 0 }), refused('microBatches'));
  assert.throws(
    () => new PipelineParallel(solo, model, { optimizer, microBatches: 2, schedule: 'zb' as 'gpipe' }),
    refused('schedule'),
  );
  assert.throws(
    () => new PipelineParallel(solo, model, { optimizer, microBatches: 2, layers: [2, 1] }),
    refused('layers'),
  );
  const ddp = new DataParallel(solo, model, { optimizer });
  await assert.rejects(
    ddp.step(corpus.batch(0, { batchSize: 2, seqLen: 8 }), { sync: 'yes' as never }),
    refused('sync'),
  );
  const report = await ddp.step(corpus.batch(0, { batchSize: 2, seqLen: 8 }));
  assert.ok(Number.isFinite(report.loss));
  ddp.dispose();
});

test('pipeline orders: every micro-batch forward then backward once per stage, 1F1B warming up stages - stage - 1', () => {
  assert.deepEqual(
    pipelineOrder('gpipe', 0, 2, 3).map((o) => `${o.kind}${o.micro}`),
    ['F0', 'F1', 'F2', 'B2', 'B1', 'B0'],
  );
  assert.deepEqual(
    pipelineOrder('1f1b', 0, 3, 4).map((o) => `${o.kind}${o.micro}`),
    ['F0', 'F1', 'F2', 'B0', 'F3', 'B1', 'B2', 'B3'],
  );
  assert.deepEqual(
    pipelineOrder('1f1b', 2, 3, 2).map((o) => `${o.kind}${o.micro}`),
    ['F0', 'B0', 'F1', 'B1'],
  );
  assert.deepEqual(
    [0, 1, 2].map((s) => evenStageLayers(8, s, 3)),
    [
      [0, 3],
      [3, 6],
      [6, 8],
    ],
  );
});
