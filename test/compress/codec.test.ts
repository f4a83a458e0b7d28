import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codecFor, finiteAbsMax } from '../../src/compress/codec.js';
import { COMPRESSION_FORMATS, type CompressionFormat, parseCompression } from '../../src/compress/compression-spec.js';
import { arenaKernels } from '../../src/kernels/simd-kernels.js';
import { Arena } from '../../src/memory/arena.js';
import { seededRandom } from '../../src/seeded-random.js';

const FORMATS = Object.keys(COMPRESSION_FORMATS) as CompressionFormat[];

/** Values over many magnitudes, with zeros and outliers, as gradients have. */
function gradientLike(count: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const magnitude = 10 ** ((Math.floor(i / 64) % 7) - 3);
    const r = random();
    out[i] = r < 0.05 ? 0 : (random() + random() + random() - 1.5) * magnitude * (r > 0.99 ? 100 : 1);
  }
  return out;
}

/** The largest finite magnitude of the block (of the codec's size) that holds element i. */
function blockMaxOf(values: Float32Array, i: number, block: number): number {
  const start = i - (i % block);
  return finiteAbsMax(values, start, Math.min(values.length, start + block));
}

for (const format of FORMATS) {
  for (const blockSize of [2, 32, 256]) {
    if ((format === 'fp16' || format === 'bf16') && blockSize !== 256) continue;
    test(`${format} (block ${blockSize}) decodes within its stated element bound, which is not vacuous`, () => {
      const codec = codecFor(parseCompression({ format, blockSize }, {}));
      for (const count of [1, 3, blockSize - 1, blockSize, blockSize + 1, 1000]) {
        if (count < 1) continue;
        const values = gradientLike(count, count * 31 + blockSize);
        const bytes = new Uint8Array(codec.encodedBytes(count));
        assert.equal(bytes.length % 4, 0, 'encoded chunks are whole words');
        codec.encode(values, bytes);
        const back = new Float32Array(count);
        codec.decode(bytes, back);
        const block = format === 'fp16' || format === 'bf16' ? count : blockSize;
        let worstShare = 0;
        for (let i = 0; i < count; i++) {
          const bound = codec.elementError(values[i], blockMaxOf(values, i, block));
          const err = Math.abs(back[i] - values[i]);
          assert.ok(
            err <= bound,
            `${format} count ${count} element ${i}: ${values[i]} -> ${back[i]}, error ${err} > ${bound}`,
          );
          if (bound > 0) worstShare = Math.max(worstShare, err / bound);
        }
        // Random data comes close to the bound somewhere: the bound says something.
        if (count >= 1000) assert.ok(worstShare > 0.3, `${format}: largest error is only ${worstShare} of the bound`);
        const acc = Float32Array.from(values);
        codec.accumulate(bytes, acc);
        for (let i = 0; i < count; i++) assert.equal(acc[i], Math.fround(values[i] + back[i]));
      }
    });
  }
}

test('the bounds are the documented ones: int8 half a step of M/127, int4 of M/7, fp8 and fp16 relative', () => {
  const spec = (format: CompressionFormat) => codecFor(parseCompression(format, {}));
  assert.ok(spec('int8').elementError(0.5, 1) <= (1 / 254) * (1 + 2 ** -13));
  assert.ok(spec('int4').elementError(0.5, 1) <= (1 / 14) * (1 + 2 ** -13));
  assert.ok(spec('fp8e4m3').elementError(1, 1) <= 2 ** -4 + 2 ** -17);
  assert.ok(spec('fp8e5m2').elementError(1, 1) <= 2 ** -3 + 2 ** -17);
  assert.ok(spec('fp16').elementError(1, 1) <= 2 ** -11 + 1e-6);
  assert.ok(spec('bf16').elementError(1, 1) <= 2 ** -8 + 1e-6);
  assert.equal(spec('fp16').elementError(1e5, 1e5), Number.POSITIVE_INFINITY);
});

test('non-finite elements: NaN stays NaN everywhere; Inf stays Inf in fp16, bf16 and E5M2 and arrives as NaN in int8, int4 and E4M3; the rest of the block keeps its scale', () => {
  const values = Float32Array.from([
    1,
    Number.NaN,
    2,
    Number.POSITIVE_INFINITY,
    -3,
    Number.NEGATIVE_INFINITY,
    0.5,
    0.25,
  ]);
  for (const format of FORMATS) {
    const codec = codecFor(parseCompression({ format, blockSize: 8 }, {}));
    const bytes = new Uint8Array(codec.encodedBytes(values.length));
    codec.encode(values, bytes);
    const back = new Float32Array(values.length);
    codec.decode(bytes, back);
    assert.ok(Number.isNaN(back[1]), `${format}: NaN`);
    const keepsInf = format === 'fp16' || format === 'bf16' || format === 'fp8e5m2';
    if (keepsInf) {
      assert.equal(back[3], Number.POSITIVE_INFINITY, format);
      assert.equal(back[5], Number.NEGATIVE_INFINITY, format);
    } else {
      assert.ok(Number.isNaN(back[3]) && Number.isNaN(back[5]), `${format}: Inf arrives as NaN`);
    }
    for (const i of [0, 2, 4, 6, 7])
      assert.ok(
        Math.abs(back[i] - values[i]) <= codec.elementError(values[i], 3),
        `${format} element ${i}: ${back[i]}`,
      );
  }
});

test('values beyond a format: bf16, fp8 and the integer formats scale or keep the range; fp16 overflows to Inf as a cast does', () => {
  const values = Float32Array.from([1e30, -3e29, 7e28, 1e-30]);
  for (const format of FORMATS) {
    const codec = codecFor(parseCompression({ format, blockSize: 4 }, {}));
    const bytes = new Uint8Array(codec.encodedBytes(values.length));
    codec.encode(values, bytes);
    const back = new Float32Array(values.length);
    codec.decode(bytes, back);
    if (format === 'fp16') {
      assert.equal(back[0], Number.POSITIVE_INFINITY);
      assert.equal(back[1], Number.NEGATIVE_INFINITY);
      continue;
    }
    for (let i = 0; i < values.length; i++)
      assert.ok(
        Math.abs(back[i] - values[i]) <= codec.elementError(values[i], 1e30),
        `${format} ${values[i]} -> ${back[i]}`,
      );
  }
});

test('compression specs are refused with the argument and what was expected', () => {
  const codeOf = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      return `${(err as { code: string }).code}: ${(err as Error).message}`;
    }
    return 'accepted';
  };
  assert.match(
    codeOf(() => parseCompression('int9', { rank: 2 })),
    /INVALID_ARGUMENT: Rank 2: compression format 'int9' is unknown: expected one of fp16, bf16/,
  );
  assert.match(
    codeOf(() => parseCompression({ format: 'int8', blockSize: 3 }, {})),
    /blockSize must be an even integer/,
  );
  assert.match(
    codeOf(() => parseCompression({ format: 'int8', block: 64 }, {})),
    /unknown key 'block'/,
  );
  assert.match(
    codeOf(() => parseCompression(7, {})),
    /must be a format name/,
  );
  assert.deepEqual(parseCompression('int4', {}), { format: 'int4', blockSize: 256, shadow: false });
});

test('the SIMD codec loops agree with the JavaScript ones: 16-bit floats bit for bit, int codes within one step, every decode bit for bit', () => {
  const arena = Arena.create();
  const simd = arenaKernels(arena).codecs;
  assert.ok(simd !== undefined, 'the codec loops instantiate on this machine');
  const inArena = <T extends Float32Array | Uint8Array>(
    ctor: { new (b: ArrayBufferLike, o: number, n: number): T; BYTES_PER_ELEMENT: number },
    n: number,
  ) =>
    arena.view(ctor as never, arena.allocate(Math.max(64, n * ctor.BYTES_PER_ELEMENT)), n, ctor.BYTES_PER_ELEMENT) as T;
  for (const format of ['int8', 'int4', 'bf16', 'fp16'] as const) {
    for (const count of [16, 40, 256, 1000, 4096 + 7]) {
      const spec = parseCompression({ format, blockSize: 64 }, {});
      const js = codecFor(spec);
      const fast = codecFor(spec, simd);
      const values = inArena(Float32Array, count);
      values.set(gradientLike(count, count));
      values[3] = Number.NaN;
      values[count - 1] = Number.POSITIVE_INFINITY;
      if (count > 20) values[17] = 3e38;
      const viaJs = inArena(Uint8Array, js.encodedBytes(count));
      const viaSimd = inArena(Uint8Array, js.encodedBytes(count));
      js.encode(values, viaJs);
      fast.encode(values, viaSimd);
      if (format === 'bf16' || format === 'fp16')
        assert.deepEqual([...viaSimd], [...viaJs], `${format} ${count}: encodings`);
      // Decoding the same bytes gives the same bits, and accumulating adds them in float32.
      const outJs = new Float32Array(count);
      const outSimd = inArena(Float32Array, count);
      js.decode(viaSimd, outJs);
      fast.decode(viaSimd, outSimd);
      for (let i = 0; i < count; i++) {
        assert.ok(
          Object.is(outSimd[i], outJs[i]) || (Number.isNaN(outSimd[i]) && Number.isNaN(outJs[i])),
          `${format} ${count} decode ${i}: ${outSimd[i]} vs ${outJs[i]}`,
        );
        const bound = fast.elementError(values[i], 3e38);
        if (Number.isFinite(values[i]) && format !== 'fp16')
          assert.ok(Math.abs(outSimd[i] - values[i]) <= bound, `${format} ${count} element ${i}`);
      }
      const accJs = Float32Array.from(values, (v) => (Number.isFinite(v) ? v : 0));
      const accSimd = inArena(Float32Array, count);
      accSimd.set(accJs);
      js.accumulate(viaSimd, accJs);
      fast.accumulate(viaSimd, accSimd);
      for (let i = 0; i < count; i++)
        assert.ok(
          Object.is(accSimd[i], accJs[i]) || (Number.isNaN(accSimd[i]) && Number.isNaN(accJs[i])),
          `${format} ${count} accumulate ${i}`,
        );
    }
  }
});
