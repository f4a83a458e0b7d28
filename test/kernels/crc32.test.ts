import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { crc32, crc32Implementation } from '../../src/kernels/crc32.js';

test('crc32 is the IEEE CRC-32 (check value of "123456789")', () => {
  assert.equal(crc32(new TextEncoder().encode('123456789')) >>> 0, 0xcbf43926);
  assert.equal(crc32(new Uint8Array(0)) >>> 0, 0);
});

test('crc32 matches zlib on shared memory at odd offsets, whole and continued piece by piece', (t) => {
  if (crc32Implementation !== 'native')
    t.diagnostic('@node-rs/crc32 is not installed for this platform: crc32 is zlib, compared with itself');
  const bytes = new Uint8Array(new SharedArrayBuffer(1 << 20), 3, (1 << 20) - 5);
  let x = 12345;
  for (let i = 0; i < bytes.length; i++) {
    x = Math.imul(x, 1103515245) + 12345;
    bytes[i] = x >>> 24;
  }
  const expected = zlibCrc32(bytes) >>> 0;
  assert.equal(crc32(bytes) >>> 0, expected);
  let running = 0;
  for (let at = 0; at < bytes.length; at += 4093)
    running = crc32(bytes.subarray(at, Math.min(bytes.length, at + 4093)), running);
  assert.equal(running >>> 0, expected);
  bytes[777] ^= 1;
  assert.notEqual(crc32(bytes) >>> 0, expected);
});
