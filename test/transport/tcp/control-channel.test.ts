import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, errorWireNumber } from '../../../src/errors.js';
import { CONTROL_OPCODES } from '../../../src/transport/tcp/control-channel.js';

test('control opcodes keep their wire numbers, and no error code (a failure announcement) shares one', () => {
  assert.deepEqual({ ...CONTROL_OPCODES }, { GOODBYE: 0xffff, ENTERED: 0xfffe, HEARTBEAT: 0xfffd });
  const control = new Set<number>(Object.values(CONTROL_OPCODES));
  for (const code of Object.values(ErrorCode))
    assert.ok(!control.has(errorWireNumber(code)), `${code} is announced with a control opcode's number`);
});
