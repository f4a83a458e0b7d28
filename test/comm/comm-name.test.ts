import assert from 'node:assert/strict';
import { test } from 'node:test';
import { childName } from '../../src/comm/comm-name.js';

test('a step repeated at the end of a communicator name is counted, not written again', () => {
  let name = 'world';
  for (let i = 0; i < 40; i++) name = childName(name, 'shrink1');
  assert.equal(name, 'world.shrink1*40');
  assert.equal(childName('world.shrink1*40', 'shrink2'), 'world.shrink1*40.shrink2');
  assert.equal(childName('world.split0.color1', 'split0.color1'), 'world.split0.color1*2');
  assert.equal(childName('world.split10.color1', 'split0.color1'), 'world.split10.color1.split0.color1');
  assert.equal(childName('world.split0.color-1*3', 'split0.color-1'), 'world.split0.color-1*4');
});

test('communicator names made by any sequence of splits and shrinks are unique', () => {
  // Every path of up to 5 steps from the world, drawn from steps that look alike.
  const steps = ['shrink1', 'shrink2', 'shrink11', 'split0.color0', 'split0.color10', 'split10.color0'];
  const seen = new Map<string, string>();
  const walk = (name: string, path: string, depth: number) => {
    const before = seen.get(name);
    assert.equal(before, undefined, `${path} and ${before} are both named ${name}`);
    seen.set(name, path);
    if (depth === 5) return;
    for (const step of steps) walk(childName(name, step), `${path}/${step}`, depth + 1);
  };
  walk('world', 'world', 0);
  assert.equal(seen.size, (6 ** 6 - 1) / 5);
});
