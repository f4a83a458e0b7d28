import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runTsccl } from '../harness/cli.js';

const tsccl = (env: Record<string, string>, ...args: string[]) => runTsccl(args, { env });

const example = fileURLToPath(new URL('../../../examples/hello-allreduce.mjs', import.meta.url));

test('tsccl --version prints the package version', async () => {
  const { version } = JSON.parse(
    readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8'),
  ) as { version: string };
  const { code, stdout } = await tsccl({}, '--version');
  assert.equal(code, 0);
  assert.equal(stdout.trim(), version);
});

for (const command of [
  ['run', '-n', '2', example],
  ['launch', '--nproc-per-node', '2', example],
  ['bench', '-b', '8', '-e', '8', '-g', '2'],
]) {
  test(`tsccl ${command[0]} refuses a bad TSCCL_* value before any rank starts, naming it and what it expects`, async () => {
    const { code, stdout, stderr } = await tsccl({ TSCCL_DEBUG: 'VERBOSE', TSCCL_STORE: 'garbage' }, ...command);
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.match(
      stderr,
      /^tsccl: TSCCL_ERR_INVALID_ARGUMENT: TSCCL_DEBUG=VERBOSE is not valid: expected one of NONE, WARN, INFO; TSCCL_STORE=garbage is not valid/,
    );
    assert.doesNotMatch(stderr, /\n\s+at /); // no stack trace
  });
}

test('a misspelled TSCCL_ variable is named with the closest real one, and the job still runs', async () => {
  const { code, stderr } = await tsccl({ TSCCL_TIMEOUTMS: '5000' }, 'run', '-n', '2', example);
  assert.equal(code, 0);
  assert.match(stderr, /warning: TSCCL_TIMEOUTMS is not a tsccl variable \(did you mean TSCCL_TIMEOUT_MS\?\)/);
});

test('tsccl topo show --help lists the presets', async () => {
  const { code, stdout } = await tsccl({}, 'topo', 'show', '--help');
  assert.equal(code, 0);
  assert.match(stdout, /preset name \(dgx1-v100, .*ascend-910b.*\) or \.json file/s);
});

test('tsccl sim: rows of collectives without a root print -1 there, as tsccl bench does; --proto LL on an NVLS server chooses among what LL allows', async () => {
  const { code, stdout } = await tsccl(
    {},
    'sim',
    '--topo',
    'dgx-h100',
    '-o',
    'all_reduce',
    '-b',
    '1M',
    '-e',
    '1M',
    '--proto',
    'LL',
  );
  assert.equal(code, 0);
  const row = stdout.split('\n').find((line) => /^\s+1048576\s/.test(line))!;
  assert.equal(row.trim().split(/\s+/)[4], '-1');
  assert.match(row, /\sLL\s/);
  const rooted = await tsccl({}, 'sim', '--topo', 'dgx-h100', '-o', 'broadcast', '-b', '1M', '-e', '1M', '--root', '3');
  assert.equal(
    rooted.stdout
      .split('\n')
      .find((line) => /^\s+1048576\s/.test(line))!
      .trim()
      .split(/\s+/)[4],
    '3',
  );
  const named = await tsccl(
    {},
    'sim',
    '--topo',
    'dgx-h100',
    '-o',
    'all_reduce',
    '-b',
    '1M',
    '-e',
    '1M',
    '--algo',
    'nvls',
    '--proto',
    'LL',
  );
  assert.equal(named.code, 1);
  assert.match(named.stderr, /nvls runs with the Simple protocol only/);
});
