import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { measureCoreSwitchUs } from '../../src/tune/core-switch.js';

test('a switch between two threads pinned to one core is measured, and costs more than a hand-off between two cores', (t) => {
  if (spawnSync('taskset', ['--version']).error !== undefined) {
    t.skip('taskset (util-linux) is not available');
    return;
  }
  const measured = measureCoreSwitchUs(1);
  assert.ok('us' in measured, `not measured: ${'missing' in measured ? measured.missing : ''}`);
  // A switch is a system call and a context switch: more than a flag's flight between cores
  // (0.44 us on the 2-core VM), well under a scheduler tick.
  assert.ok(measured.us > 0.1 && measured.us < 1000, `${measured.us} us`);
});
