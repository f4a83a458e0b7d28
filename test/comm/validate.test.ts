import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocatedDTypes, resolveDType } from '../../src/comm/validate.js';
import { dtypeInfo } from '../../src/dtypes/dtype.js';
import { ErrorCode, TscclError } from '../../src/errors.js';

test("an array's dtype: its class's where one dtype owns the class, else what comm.alloc recorded or the option says", () => {
  assert.equal(resolveDType(new Float32Array(2), undefined, 'buffer', 0).name, 'float32');
  assert.equal(resolveDType(new BigInt64Array(2), undefined, 'buffer', 0).name, 'int64');
  assert.equal(resolveDType(new Uint8Array(2), undefined, 'buffer', 0).name, 'uint8');
  const half = new Uint16Array(2);
  allocatedDTypes.set(half, dtypeInfo('bfloat16'));
  assert.equal(resolveDType(half, undefined, 'buffer', 0).name, 'bfloat16');
  const fp8 = new Uint8Array(2);
  allocatedDTypes.set(fp8, dtypeInfo('float8e4m3'));
  assert.equal(resolveDType(fp8, undefined, 'buffer', 0).name, 'float8e4m3');
  assert.equal(resolveDType(new Uint16Array(2), 'float16', 'buffer', 0).name, 'float16');
  assert.throws(
    () => resolveDType(new Uint16Array(2), undefined, 'buffer', 3),
    (err: unknown) =>
      err instanceof TscclError && err.code === ErrorCode.INVALID_ARGUMENT && /float16/.test(err.message),
  );
  assert.throws(
    () => resolveDType(new Float32Array(2), 'float64', 'output', 1),
    (err: unknown) =>
      err instanceof TscclError && err.code === ErrorCode.INVALID_ARGUMENT && /Rank 1: output/.test(err.message),
  );
});
