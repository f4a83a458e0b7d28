import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backwardOverlap } from '../../src/sim/backward-overlap.js';

test('with backward longer than the reduction, only the last bucket is left on the step', () => {
  const o = backwardOverlap(1000, 100, { bucketBytes: 25, timeOf: (bytes) => bytes });
  assert.deepEqual(
    o.buckets.map((b) => [b.readyUs, b.startUs, b.endUs]),
    [
      [250, 250, 275],
      [500, 500, 525],
      [750, 750, 775],
      [1000, 1000, 1025],
    ],
  );
  assert.equal(o.exposedUs, 25);
  assert.equal(o.serialUs, 100);
});

test('with the reduction longer than backward, buckets queue on the stream and most of it is left', () => {
  const o = backwardOverlap(100, 100, { bucketBytes: 40, timeOf: (bytes) => 10 * bytes });
  // Buckets of 40, 40 and 20 bytes, ready at 40, 80 and 100 us; the stream is busy from 40 on.
  assert.deepEqual(
    o.buckets.map((b) => [b.bytes, b.startUs, b.endUs]),
    [
      [40, 40, 440],
      [40, 440, 840],
      [20, 840, 1040],
    ],
  );
  assert.equal(o.exposedUs, 940);
  assert.equal(o.serialUs, 1000);
});

test("the last bucket goes out in pieces as backward produces it, so only the last piece's all-reduce is left", () => {
  // Buckets of 40 bytes from the back: 40, 40, then the last 20 in pieces of 8, 8 and 4.
  const o = backwardOverlap(100, 100, { bucketBytes: 40, tailPieceBytes: 8, timeOf: (bytes) => bytes / 4 });
  assert.deepEqual(
    o.buckets.map((b) => [b.bytes, b.readyUs, b.startUs, b.endUs]),
    [
      [40, 40, 40, 50],
      [40, 80, 80, 90],
      [8, 88, 90, 92],
      [8, 96, 96, 98],
      [4, 100, 100, 101],
    ],
  );
  assert.equal(o.exposedUs, 1);
  // Whole, the last 20 bytes would start when backward ends and leave all 5 us of their all-reduce.
  assert.equal(backwardOverlap(100, 100, { bucketBytes: 40, tailPieceBytes: 40, timeOf: (b) => b / 4 }).exposedUs, 5);
});
