import assert from 'node:assert/strict';
import { test } from 'node:test';
import { solveIncreasing } from '../../src/tune/solve-increasing.js';

const bounds = { firstStep: 1, maxX: 1e6, tolerance: () => 1e-6 };

test('finds where an increasing function reaches the target, past the first bracket', () => {
  const { x, atZero } = solveIncreasing((v) => v * v, 900, bounds);
  assert.equal(atZero, false);
  assert.ok(Math.abs(x - 30) < 1e-5, `${x}`);
});

test('a target the function already reaches at 0 gives 0, and one it never reaches stops at the bound', () => {
  assert.deepEqual(
    solveIncreasing((v) => v + 5, 3, bounds),
    { x: 0, atZero: true },
  );
  const capped = solveIncreasing((v) => Math.min(v, 10), 20, { ...bounds, maxX: 64 });
  assert.equal(capped.atZero, false);
  assert.ok(capped.x >= 32 && capped.x <= 64, `${capped.x}`);
});
