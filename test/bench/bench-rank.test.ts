import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocatePool } from '../../src/bench/bench-rank.js';
import { type DType, dtypeInfo } from '../../src/dtypes/dtype.js';

const PAGE = 4096;

test('the bench pool is written on every page, so no buffer reads the shared zero page', () => {
  const fresh = (dtype: DType, count: number) =>
    new (dtypeInfo(dtype).ctor)(new SharedArrayBuffer(count * dtypeInfo(dtype).bytes) as never);
  for (const dtype of ['float32', 'float16', 'int8', 'int64'] as DType[]) {
    const pool = allocatePool({ alloc: fresh as never }, dtype, 5 * PAGE + 3, 3 * PAGE);
    for (const array of [pool.input, pool.output]) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let page = 0; page < bytes.length; page += PAGE) {
        assert.ok(
          bytes.subarray(page, page + PAGE).every((b) => b !== 0),
          `${dtype}: page at ${page} holds unwritten bytes`,
        );
      }
    }
    if (dtype === 'float32')
      assert.ok(
        Math.abs(Number(pool.input[0]) - 0.0115) < 1e-4,
        `the pattern is a normal float32, got ${pool.input[0]}`,
      );
  }
});
