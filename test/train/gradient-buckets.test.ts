import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Variable } from '@tensorflow/tfjs';
import { type BucketMemory, GradientBuckets } from '../../src/train/gradient-buckets.js';
import type { LayeredModel } from '../../src/train/layered-model.js';

const MiB = 2 ** 20;

/** A model of layers whose parameters have these float counts; only their sizes matter to bucketing. */
function modelOf(layers: Record<string, number[]>): LayeredModel {
  return {
    layers: Object.entries(layers).map(([name, sizes]) => ({
      name,
      params: sizes.map((size, i) => ({ name: `${name}.${i}`, size }) as unknown as Variable),
    })),
  } as unknown as LayeredModel;
}

const memory = {
  alloc: (_dtype: string, count: number) => new Float32Array(count),
  free: () => {},
} as unknown as BucketMemory;

/** Each bucket's parameters by name, in backward's order. */
const layout = (buckets: GradientBuckets) =>
  buckets.buckets.map((b) => b.params.map((p) => (p as unknown as { name: string }).name));

// The GPT of bench/train, dim 256, one block: embedding, attention, MLP, head (floats per parameter).
const gpt = modelOf({
  embed: [6144, 16384],
  attn: [512, 196608, 768, 65536, 256],
  mlp: [512, 262144, 1024, 262144, 256],
  head: [512, 6144, 24],
});

test('buckets fill in reverse layer order up to the cap; the last one is cut where a layer ends past 1 MiB', () => {
  // 3.1 MiB in all, under a 4 MiB cap: one bucket, which is the last, cut into head + MLP (2.0
  // MiB), attention (1.0 MiB) and what is left, the embedding.
  const buckets = new GradientBuckets(gpt, 4 * MiB, 'none', memory);
  assert.deepEqual(
    layout(buckets).map((names) => [...new Set(names.map((n) => n.split('.')[0]))]),
    [['head', 'mlp'], ['attn'], ['embed']],
  );
  // Whole layers only: no piece starts inside one.
  assert.deepEqual(layout(buckets)[1], ['attn.0', 'attn.1', 'attn.2', 'attn.3', 'attn.4']);
  // A 2.5 MiB cap closes head + MLP (and attention's first parameter, its layer norm, which
  // still fits) as a full bucket; the rest is the last bucket, cut after attention.
  assert.deepEqual(
    layout(new GradientBuckets(gpt, 2.5 * MiB, 'none', memory)).map((n) => n[0]),
    ['head.0', 'attn.1', 'embed.0'],
  );
  // Under a cap below 1 MiB no piece of the last bucket can reach it: buckets as the cap makes them.
  const small = new GradientBuckets(gpt, 0.75 * MiB, 'none', memory);
  for (const bucket of small.buckets) assert.ok(bucket.grads.length * 4 <= 0.75 * MiB || bucket.params.length === 1);
  assert.equal(layout(small).flat().length, 15);
  assert.deepEqual(layout(small)[layout(small).length - 1], ['attn.2', 'attn.3', 'attn.4', 'embed.0', 'embed.1']);
});
