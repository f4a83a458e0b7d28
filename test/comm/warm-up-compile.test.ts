import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import {
  INTERRUPT_BUDGET_DEFAULTS,
  WARM_UP_BUDGET_DIVISOR,
  warmUpInterruptBudget,
} from '../../src/comm/warm-up-compile.js';

test("the warm-up's interrupt budget is a share of V8's, which it restores after; flags that name one stand, and an unknown V8 is left alone", () => {
  assert.deepEqual(warmUpInterruptBudget('11.3.244.8-node.38', ['--max-old-space-size=100']), {
    during: Math.round(67584 / WARM_UP_BUDGET_DIVISOR),
    after: 67584,
  });
  assert.equal(warmUpInterruptBudget('11.3.244.8', ['--interrupt-budget=1000']), undefined);
  assert.equal(warmUpInterruptBudget('11.3.244.8', ['--interrupt_budget', '1000']), undefined);
  assert.equal(warmUpInterruptBudget('99.1.0', []), undefined);
});

test("the listed default of the running V8's interrupt budget is the one its Node lists (node --v8-options)", (t) => {
  const [major, minor] = process.versions.v8.split('.');
  const listed = INTERRUPT_BUDGET_DEFAULTS[`${major}.${minor}`];
  if (listed === undefined) {
    t.skip(`V8 ${process.versions.v8} is not listed: the warm-up leaves its interrupt budget alone`);
    return;
  }
  const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const own = /--interrupt-budget=(\d+)/.exec(options.slice(options.indexOf('--interrupt-budget (')));
  assert.ok(own !== null, 'node --v8-options lists --interrupt-budget with its default');
  assert.equal(listed, Number(own[1]));
});
