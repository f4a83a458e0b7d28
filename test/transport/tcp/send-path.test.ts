import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checksumsFrame } from '../../../src/transport/tcp/send-path.js';

test('frames carry a CRC32 to other machines by default, and as asked otherwise', () => {
  assert.equal(checksumsFrame(undefined, false), true);
  assert.equal(checksumsFrame(undefined, true), false);
  for (const sameMachine of [true, false]) {
    assert.equal(checksumsFrame(true, sameMachine), true);
    assert.equal(checksumsFrame(false, sameMachine), false);
  }
});
