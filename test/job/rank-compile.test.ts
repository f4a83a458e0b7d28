import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { checkParams } from '../../src/config/params.js';
import { ErrorCode, type TscclError } from '../../src/errors.js';
import { compilesOnRank, processRankCompileFlags } from '../../src/job/rank-compile.js';
import { withEnvAsync } from '../harness/env.js';
import { launchFixture } from '../harness/ranks.js';

/** Runs `body` with TSCCL_RANK_SYNC_COMPILE set to `setting` (undefined: unset). */
function withSetting<T>(setting: string | undefined, body: () => T | Promise<T>): Promise<T> {
  return withEnvAsync('TSCCL_RANK_SYNC_COMPILE', setting, async () => body());
}

test('ranks compile on their own thread where they fill the cores (auto), always (1) or never (0)', async () => {
  const cores = availableParallelism();
  await withSetting(undefined, () => {
    assert.equal(compilesOnRank(cores, []), true, 'as many ranks as cores');
    assert.equal(compilesOnRank(cores + 3, []), true, 'more ranks than cores');
    assert.equal(compilesOnRank(cores - 1, []), cores === 1, 'a core left for the compiler');
  });
  await withSetting('1', () => assert.equal(compilesOnRank(1, []), true, 'one rank, however many cores'));
  await withSetting('0', () => assert.equal(compilesOnRank(cores + 3, []), false));
});

test('the setting is read from the environment the job is given', () => {
  assert.equal(compilesOnRank(64, [], { TSCCL_RANK_SYNC_COMPILE: '0' }), false);
  assert.equal(compilesOnRank(1, [], { TSCCL_RANK_SYNC_COMPILE: '1' }), true);
  assert.throws(
    () => checkParams({ TSCCL_RANK_SYNC_COMPILE: 'yes' }),
    (err: TscclError) => err.code === ErrorCode.INVALID_ARGUMENT && /TSCCL_RANK_SYNC_COMPILE=yes/.test(err.message),
  );
});

test("the ranks' own choice of V8's flag stands", async () => {
  await withSetting('1', () => {
    assert.equal(compilesOnRank(64, ['--concurrent-recompilation']), false);
    assert.equal(compilesOnRank(64, ['--no-concurrent-recompilation']), false);
    assert.equal(compilesOnRank(64, ['--no_concurrent_recompilation']), false);
    assert.deepEqual(processRankCompileFlags(64, ['--inspect']), ['--no-concurrent-recompilation']);
    assert.deepEqual(processRankCompileFlags(64, ['--concurrent-recompilation']), []);
  });
});

test('process ranks the launcher starts get the flag as the setting says', async () => {
  for (const [setting, expected] of [
    ['1', true],
    ['0', false],
  ] as const) {
    const flags = await withSetting(
      setting,
      async () => (await launchFixture('exec-argv-rank', 2)).results as string[][],
    );
    for (const [rank, execArgv] of flags.entries())
      assert.equal(
        execArgv.includes('--no-concurrent-recompilation'),
        expected,
        `rank ${rank}, ${setting}: ${execArgv}`,
      );
  }
});
