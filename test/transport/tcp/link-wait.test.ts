import assert from 'node:assert/strict';
import { test } from 'node:test';
import { availableParallelism } from 'node:os';
import { receivePollMs } from '../../../src/transport/tcp/link-wait.js';
import { rankSpin } from '../../../src/transport/wait.js';
import { withEnv } from '../../harness/env.js';

test("tcp: a small receive polls the event loop, yielding its core where the machine's ranks outnumber the cores; large ones sleep at once", () => {
  const cores = availableParallelism();
  const alone = rankSpin(cores);
  assert.ok(receivePollMs(8, alone.spinMs) >= 0.1, 'polls longer than a sleeping process takes to wake');
  assert.equal(alone.spinYields, false);
  assert.equal(receivePollMs(65536, alone.spinMs), receivePollMs(8, alone.spinMs), 'up to 64 KiB');
  assert.equal(receivePollMs(65537, alone.spinMs), 0, 'a larger message streams: its reader sleeps between reads');
  const crowded = rankSpin(cores + 1);
  assert.ok(
    crowded.spinYields && receivePollMs(8, crowded.spinMs) === receivePollMs(8, alone.spinMs),
    'processes that outnumber the cores poll as long, giving their core to the one they wait for on every turn',
  );
  withEnv('TSCCL_SPIN_YIELD', '0', () =>
    assert.ok(
      receivePollMs(8, rankSpin(cores + 1).spinMs) < 0.01,
      'without the yield they would poll on the core of the one they wait for',
    ),
  );
});
