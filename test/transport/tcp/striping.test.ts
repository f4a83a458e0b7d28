import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stripes } from '../../../src/transport/tcp/striping.js';
import { STRIPE_MIN_BYTES } from '../../../src/transport/tcp/tcp-tunables.js';

test('tcp: stripes cut messages into K parts at 64-byte boundaries covering every byte', () => {
  assert.deepEqual(stripes(1000, 3), [
    [0, 320],
    [320, 640],
    [640, 1000],
  ]);
  for (const [total, k] of [
    [STRIPE_MIN_BYTES, 4],
    [STRIPE_MIN_BYTES + 13, 3],
    [3 * 1024 * 1024 + 8, 2],
  ]) {
    const parts = stripes(total, k);
    assert.equal(parts[0][0], 0);
    assert.equal(parts[k - 1][1], total);
    parts.forEach(([a, b], i) => {
      assert.ok(b > a);
      assert.equal(a % 64, 0);
      if (i > 0) assert.equal(parts[i - 1][1], a);
    });
  }
});
