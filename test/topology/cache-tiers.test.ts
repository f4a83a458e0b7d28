import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheScale } from '../../src/topology/cache-tiers.js';

test('cache tiers interpolate in log(bytes) and hold beyond the ends, in any order', () => {
  const tiers = [
    { bytes: 64, scale: 1 },
    { bytes: 4, scale: 3 },
  ];
  assert.equal(cacheScale(tiers, 1), 3);
  assert.equal(cacheScale(tiers, 4), 3);
  assert.equal(cacheScale(tiers, 16), 2); // halfway between 4 and 64 in log(bytes)
  assert.equal(cacheScale(tiers, 64), 1);
  assert.equal(cacheScale(tiers, 1e12), 1);
});

test('the shared and reduce scales interpolate the same way; a tier without one stands by its scale', () => {
  const tiers = [
    { bytes: 4, scale: 3, sharedScale: 3 },
    { bytes: 64, scale: 2, sharedScale: 1 },
    { bytes: 1024, scale: 1 },
  ];
  assert.equal(cacheScale(tiers, 16, 'sharedScale'), 2);
  assert.equal(cacheScale(tiers, 64, 'sharedScale'), 1);
  assert.equal(cacheScale(tiers, 64), 2);
  assert.equal(cacheScale(tiers, 1024, 'sharedScale'), 1);
  assert.equal(cacheScale(tiers, 256, 'sharedScale'), 1);
  const folds = [
    { bytes: 4, scale: 3, reduceScale: 2 },
    { bytes: 64, scale: 2 },
  ];
  assert.equal(cacheScale(folds, 4, 'reduceScale'), 2);
  assert.equal(cacheScale(folds, 16, 'reduceScale'), 2);
  assert.equal(cacheScale(folds, 16, 'sharedScale'), 2.5);
});
