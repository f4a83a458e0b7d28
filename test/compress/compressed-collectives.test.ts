import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMPRESSION_FORMATS } from '../../src/compress/compression-spec.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

type Result = { cases: number; failures: string[]; digests: string[] };
const FORMATS = Object.keys(COMPRESSION_FORMATS);
/** TSCCL_COMPRESSION_PIECE's default: calls of these tests fit one piece. */
const DEFAULT_PIECE = 524288;

/** Every rank within the bound, and every rank that holds a result holding the same bits. */
function assertSound(results: Result[], minCases: number): void {
  for (const [rank, result] of results.entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.ok(result.cases >= minCases, `rank ${rank} ran only ${result.cases} cases`);
  }
  const byCase = new Map<string, Set<string>>();
  for (const result of results)
    for (const line of result.digests) {
      const [label, digest] = line.split(': ');
      if (!byCase.has(label)) byCase.set(label, new Set());
      byCase.get(label)!.add(digest);
    }
  for (const [label, digests] of byCase) {
    // A reduce-scatter leaves each rank its own block; everything else is the same on every rank.
    if (label.includes('reduceScatter')) continue;
    assert.equal(digests.size, 1, `${label}: ranks hold different results`);
  }
}

// Block boundaries (255, 256, 257 with blocks of 256) and counts that split unevenly over the ranks.
const COUNTS = [0, 1, 7, 255, 256, 257, 1000];

for (const n of [1, 2, 3, 4, 5]) {
  test(`every compression format x collective on ${n} thread rank(s): within the stated bound, the same bits on every rank`, async () => {
    const { results } = await runFixture('compression-rank', n, {
      formats: FORMATS,
      counts: COUNTS,
      blockSize: 256,
      dtypes: n === 2 ? ['float32', 'float16', 'bfloat16'] : ['float32'],
      piece: DEFAULT_PIECE,
    });
    assertSound(results as Result[], FORMATS.length * 5 * COUNTS.length * 3);
  });
}

test('compression over TCP: 3 process ranks, small blocks', async () => {
  const { results } = await launchFixture('compression-rank', 3, {
    formats: FORMATS,
    counts: [1, 33, 64, 65, 1000],
    blockSize: 32,
    dtypes: ['float32', 'bfloat16'],
    piece: DEFAULT_PIECE,
  });
  assertSound(results as Result[], FORMATS.length * 2 * 5 * 5 * 3);
});

test('compression on 2 processes x 2 thread ranks (shared memory inside, TCP between)', async () => {
  const { results } = await launchFixture(
    'compression-rank',
    2,
    { formats: FORMATS, counts: [5, 256, 1000], blockSize: 64, dtypes: ['float32'], piece: 96 },
    { threadsPerProc: 2, env: { ...process.env, TSCCL_COMPRESSION_PIECE: '96' } },
  );
  assert.equal(results.length, 4);
  assertSound(results as Result[], FORMATS.length * 5 * 3 * 3);
});

// Pieces of 100 elements: up to 10 pieces in flight order, each with its own chunks and blocks
// (blocks of 32 end inside pieces), on threads and over TCP.
for (const transport of ['threads', 'tcp'] as const) {
  test(`a compressed call in pieces (a pipeline of 100-element pieces) on 3 ${transport === 'tcp' ? 'process' : 'thread'} ranks`, async () => {
    const args = {
      formats: FORMATS,
      counts: [99, 100, 101, 1000],
      blockSize: 32,
      dtypes: ['float32', 'float16'],
      piece: 100,
    };
    const env = { ...process.env, TSCCL_COMPRESSION_PIECE: '100' };
    const { results } =
      transport === 'tcp'
        ? await launchFixture('compression-rank', 3, args, { env })
        : await runFixture('compression-rank', 3, args, { env });
    assertSound(results as Result[], FORMATS.length * 2 * 5 * 4 * 3);
  });
}

test('bad compression arguments are refused on the calling rank, naming the argument, and lose nothing', async () => {
  type Refusals = { refusals: string[]; sum: number[]; mismatch: string };
  const { results } = await runFixture('compression-refusals-rank', 2, {}, { timeoutMs: 60_000 });
  const [first, second] = results as Refusals[];
  const expected = [
    /^TSCCL_ERR_INVALID_ARGUMENT compression: Rank 0: allReduce with compression int8: the buffer is int32; compression takes float32, float16 or bfloat16 data$/,
    /^TSCCL_ERR_INVALID_ARGUMENT compression: Rank 0: compression format 'int7' is unknown: expected one of fp16, bf16, fp8e4m3, fp8e5m2, int8, int4$/,
    /^TSCCL_ERR_INVALID_ARGUMENT compression: .*op is 'max'; compressed reductions take 'sum' or 'avg'$/,
    /^TSCCL_ERR_INVALID_ARGUMENT compression: .*algorithm 'ring' was given; a compressed call runs its own schedule$/,
    /^TSCCL_ERR_INVALID_ARGUMENT compression: Rank 0: compression blockSize must be an even integer from 2 to 1048576, got 7$/,
    /^TSCCL_ERR_INVALID_ARGUMENT compression: Rank 0: unknown option 'compression' for gather/,
    /^TSCCL_ERR_INVALID_ARGUMENT compression: .*the buffer is float8e4m3/,
  ];
  assert.equal(first.refusals.length, expected.length);
  for (const [i, pattern] of expected.entries()) assert.match(first.refusals[i], pattern);
  // int8 of 1x and 2x the same ramp: within half a step of the block's largest sum (27).
  for (const result of [first, second])
    for (let i = 0; i < 10; i++)
      assert.ok(Math.abs(result.sum[i] - 3 * i) <= 27 / 254 + 1e-6, `element ${i}: ${result.sum[i]}`);
  assert.deepEqual(first.sum, second.sum);
  // Neither side completes or waits out its timeout; at least one reads the other's message and
  // names both operations (the other may learn of the failure from it first).
  for (const result of [first, second])
    assert.match(result.mismatch, /^TSCCL_ERR_(MISMATCH|ABORTED|PEER_LOST|COMM_FAILED|RANK_FAILED)/);
  assert.ok(
    /^TSCCL_ERR_MISMATCH: Rank 0 expected compressed #\d+ .* but rank 1 sent allReduce/.test(first.mismatch) ||
      /^TSCCL_ERR_MISMATCH: Rank 1 expected allReduce #\d+ .* but rank 0 sent compressed/.test(second.mismatch),
    `${first.mismatch} / ${second.mismatch}`,
  );
});

test('TSCCL_DEBUG_CHECK names a call one rank compressed and another did not', async () => {
  const { results } = await runFixture(
    'compression-refusals-rank',
    2,
    {},
    { timeoutMs: 60_000, env: { ...process.env, TSCCL_DEBUG_CHECK: '1' } },
  );
  for (const result of results as { mismatch: string }[])
    assert.match(
      result.mismatch,
      /^TSCCL_ERR_MISMATCH: Desync on world: rank 0 called allReduce #\d+\(float32, count 262144, sum, compressed bf16\) but rank 1 called allReduce #\d+\(float32, count 262144, sum\)/,
    );
});

test('TSCCL_COMPRESSION compresses the float calls of a job, and TSCCL_COMPRESSION_SHADOW reports the error each made', async () => {
  const { results } = await runFixture(
    'compression-shadow-rank',
    2,
    {},
    { env: { ...process.env, TSCCL_COMPRESSION: 'int8', TSCCL_COMPRESSION_SHADOW: '1' } },
  );
  for (const result of results as {
    reports: {
      op: string;
      compression: string;
      elements: number;
      maxAbsError: number;
      relativeError: number;
      nonFinite: number;
    }[];
    records: { op: string; compression?: string; shadowError?: number; wireBytes?: number }[];
    ints: number[];
    same: boolean;
    exactError: number;
  }[]) {
    // The shadowed call: an exact allReduce, then the compressed one, which the report describes.
    assert.equal(result.reports.length, 1);
    const [report] = result.reports;
    assert.equal(report.compression, 'int8/256');
    assert.equal(report.elements, 3000);
    assert.equal(report.nonFinite, 0);
    // The compressed result differs from the exact one by what the unshadowed call shows too.
    assert.equal(report.maxAbsError, result.exactError);
    assert.ok(report.relativeError > 0 && report.relativeError < 4 / 254, `relative error ${report.relativeError}`);
    assert.ok(result.same, 'shadowing does not change the result');
    assert.deepEqual(result.ints, [1, 3, 5, 7, 9], 'integers are not compressed');
    assert.deepEqual(
      result.records.map((r) => [r.op, r.compression ?? 'none']),
      [
        ['allReduce', 'none'],
        ['allReduce', 'int8/256'],
        ['allReduce', 'none'],
        ['allReduce', 'int8/256'],
        ['allReduce', 'none'],
        ['broadcast', 'none'],
      ],
    );
    assert.equal(result.records[1].shadowError, report.relativeError);
    // 3000 elements over 2 ranks: 2 chunks of 1500 codes and 6 scales each, word-aligned.
    assert.equal(result.records[1].wireBytes, 2 * (1500 + 6 * 4));
  }
});

test("error feedback: a residual carries each step's rounding into the next, so the mean over steps converges to the exact sum", async () => {
  const steps = 40;
  const { results } = await runFixture('compression-feedback-rank', 3, { steps });
  for (const result of results as { withFeedback: number; without: number; exact: number[]; refusals: string[] }[]) {
    // Each rank's last residual is at most half a step of its block's scale: 7 steps of at most
    // max |x + r| <= 1.6 + 0.2 here.
    const lastResiduals = (3 * 1.8) / 14;
    assert.ok(result.withFeedback <= lastResiduals / steps + 1e-5, `with feedback ${result.withFeedback}`);
    assert.ok(result.without > 5 * result.withFeedback, `without ${result.without}, with ${result.withFeedback}`);
    assert.match(
      result.refusals[0],
      /^TSCCL_ERR_INVALID_ARGUMENT: .*the residual holds 9 elements but the input has 10/,
    );
    assert.match(
      result.refusals[1],
      /^TSCCL_ERR_INVALID_ARGUMENT: .*a residual \(error feedback\) belongs to reductions/,
    );
    assert.match(result.refusals[2], /^TSCCL_ERR_INVALID_ARGUMENT: .*residual must be a Float32Array/);
  }
});

test('NaN and Inf through a compressed all-reduce: NaN stays NaN; Inf stays Inf where the format has one, else NaN; their blocks stay finite', async () => {
  const { results } = await runFixture('compression-integrity-rank', 3, { mode: 'nonfinite' });
  for (const result of results as Record<string, string[]>[]) {
    for (const format of FORMATS) {
      const [nan, inf, neighbour, sameBlock] = result[format];
      assert.equal(nan, 'NaN', format);
      assert.equal(inf, format === 'fp16' || format === 'bf16' || format === 'fp8e5m2' ? 'Infinity' : 'NaN', format);
      assert.ok(
        Number.isFinite(Number(neighbour)) && Number.isFinite(Number(sameBlock)),
        `${format}: ${result[format]}`,
      );
    }
    assert.deepEqual(result, (results as Record<string, string[]>[])[0], 'every rank holds the same');
  }
});

test('compressed frames are checksummed: with resend off a flipped bit is TSCCL_ERR_CHECKSUM, never decoded as data', async () => {
  const all = await rankResults<{ code: string; message: string }>(
    launchFixture(
      'compression-integrity-rank',
      2,
      { mode: 'corrupt' },
      {
        env: {
          ...process.env,
          TSCCL_TEST_FAULT: 'flip@0#1',
          TSCCL_CHECKSUM: '1',
          TSCCL_RESEND_RETRIES: '0',
          TSCCL_WARMUP_MS: '0',
        },
      },
    ),
  );
  assert.equal(all[1]!.code, 'TSCCL_ERR_CHECKSUM', all[1]!.message);
  assert.match(all[1]!.message, /Rank 1, data from rank 0: TCP frame checksum mismatch/);
  assert.notEqual(all[0]!.code, 'OK');
  assert.notEqual(all[0]!.code, 'TSCCL_ERR_TIMEOUT', all[0]!.message);
});

test('TSCCL_KERNEL=js: the JavaScript codecs give results within the same bounds, the same bits on every rank', async () => {
  const { results } = await runFixture(
    'compression-rank',
    2,
    { formats: FORMATS, counts: [7, 256, 1000], blockSize: 64, dtypes: ['float32'], piece: DEFAULT_PIECE },
    { env: { ...process.env, TSCCL_KERNEL: 'js' } },
  );
  assertSound(results as Result[], FORMATS.length * 5 * 3 * 3);
});

test('compressed calls on progress engines: plain and arena arrays, an arena residual updated in place, a plain one refused', async () => {
  const { results } = await runFixture('compression-engine-rank', 2, {});
  const [a, b] = results as { plain: number[]; arena: number[]; residualMoved: boolean; refused: string }[];
  assert.deepEqual(a.plain, b.plain);
  assert.deepEqual(a.arena, b.arena);
  for (let i = 0; i < 50; i++) {
    const exact = Math.fround(Math.sin(i * 0.1) * (1 + (i % 5))) + Math.fround(Math.sin(i * 0.1 + 1) * (1 + (i % 5)));
    // Blocks of 256 whose largest value is at most 10 (two ranks' 5s): int8 within 2n x 10 / 254, int4 within 2n x 10 / 14.
    assert.ok(Math.abs(a.plain[i] - exact) <= (4 * 10) / 254, `int8 element ${i}: ${a.plain[i]} vs ${exact}`);
    assert.ok(Math.abs(a.arena[i] - exact) <= (4 * 10) / 14, `int4 element ${i}: ${a.arena[i]} vs ${exact}`);
  }
  assert.ok(a.residualMoved && b.residualMoved, 'the engine wrote the residual');
  assert.match(
    a.refused,
    /^TSCCL_ERR_INVALID_ARGUMENT: Rank 0: allReduce runs on the progress engine, which writes the compression residual from its own thread: allocate it with comm.alloc/,
  );
});
