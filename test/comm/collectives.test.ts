import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

// Every collective x dtype x count x placement on n thread ranks, against a plain reference.
// Tiny chunks force the pipelined (multi-round) paths with small data. Five and eight ranks,
// which outnumber the cores, take a 2 MiB large case: every rank builds all ranks' inputs for
// its reference, so the time grows with the square of the ranks.
for (const n of [1, 2, 3, 4, 5, 8]) {
  for (const chunkBytes of n === 4 ? ['524288', '24'] : ['524288']) {
    test(`all collectives on ${n} thread rank(s), chunk ${chunkBytes} B`, async () => {
      const largeDTypes = n === 2 ? ['float32', 'int64', 'bfloat16'] : ['float32'];
      const { results } = await runFixture(
        'collectives-rank',
        n,
        {
          counts: [0, 1, 7, 13, 31],
          largeCount: chunkBytes === '24' ? 4099 : n >= 5 ? 1 << 19 : 1 << 20,
          largeDTypes,
        },
        { env: { ...process.env, TSCCL_CHUNK_BYTES: chunkBytes } },
      );
      for (const [rank, result] of (results as { cases: number; failures: string[] }[]).entries()) {
        assert.deepEqual(result.failures, [], `rank ${rank}`);
        assert.ok(result.cases > 500, `rank ${rank} ran only ${result.cases} cases`);
      }
    });
  }
}
