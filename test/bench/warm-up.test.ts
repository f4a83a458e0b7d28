import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SMALL_CALL_MAX_BYTES, warmupCallsFor } from '../../src/bench/warm-up.js';

test('sizes up to 256 KiB warm up at least the small-call count; larger ones, and -w above it, as asked', () => {
  assert.equal(warmupCallsFor(8, 5, 4000), 4000);
  assert.equal(warmupCallsFor(SMALL_CALL_MAX_BYTES, 5, 4000), 4000);
  assert.equal(warmupCallsFor(SMALL_CALL_MAX_BYTES + 1, 5, 4000), 5, "larger sizes keep nccl-tests' -w");
  assert.equal(warmupCallsFor(8, 6000, 4000), 6000, '-w above the small-call count wins');
  assert.equal(warmupCallsFor(8, 5, 0), 5, '--warmup_small 0 is -w alone');
});
