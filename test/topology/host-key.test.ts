import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { hostIndices, hostKey, machineOf } from '../../src/topology/host-key.js';

test('two network namespaces of one kernel are two hosts but one machine', () => {
  const a = 'node1|net:[4026531840]|5b1c0f3e-0000-4000-8000-000000000001';
  const b = 'node1|net:[4026532211]|5b1c0f3e-0000-4000-8000-000000000001';
  const other = 'node2|net:[4026531840]|9d2e7a10-0000-4000-8000-000000000002';
  assert.deepEqual(hostIndices([a, b, other, a]), [0, 1, 2, 0]);
  assert.equal(machineOf(a), machineOf(b));
  assert.notEqual(machineOf(a), machineOf(other));
});

test('without a boot id the host name names the machine', () => {
  assert.equal(machineOf('node1||'), 'node1');
  assert.notEqual(machineOf('node1||'), machineOf('node2||'));
});

test('this process: the key carries the kernel boot id where Linux has one', (t) => {
  if (!existsSync('/proc/sys/kernel/random/boot_id')) return t.skip('no /proc/sys/kernel/random/boot_id here');
  const key = hostKey();
  assert.match(machineOf(key), /^[0-9a-f-]{36}$/);
});
