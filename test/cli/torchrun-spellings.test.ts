import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { withTorchrunSpellings } from '../../src/cli/torchrun-spellings.js';
import { runTsccl } from '../harness/cli.js';

const tsccl = (...args: string[]) => runTsccl(args);

test("torchrun's underscore spellings become the launcher's, up to the script and never after it", () => {
  assert.deepEqual(
    withTorchrunSpellings([
      'launch',
      '--nproc_per_node',
      '2',
      '--master_port=0',
      '--nnodes',
      '1',
      's.mjs',
      '--nproc_per_node',
      '7',
    ]),
    ['launch', '--nproc-per-node', '2', '--master-port=0', '--nnodes', '1', 's.mjs', '--nproc_per_node', '7'],
  );
  assert.deepEqual(withTorchrunSpellings(['run', '-n', '2', 's.mjs', 'launch', '--node_rank', '1']), [
    'run',
    '-n',
    '2',
    's.mjs',
    'launch',
    '--node_rank',
    '1',
  ]);
  assert.deepEqual(withTorchrunSpellings(['launch', '--', 's.mjs', '--master_addr', 'x']), [
    'launch',
    '--',
    's.mjs',
    '--master_addr',
    'x',
  ]);
});

const dir = mkdtempSync(join(tmpdir(), 'tsccl-args-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const echoArgs = join(dir, 'args.mjs');
writeFileSync(echoArgs, 'export default ({ rank, args }) => (rank === 0 ? args : undefined);\n');

test("options after the script are the script's, under run and launch, torchrun spellings included", async () => {
  const ran = await tsccl('run', '-n', '2', echoArgs, '-n', '100', '--foo', 'bar');
  assert.equal(ran.code, 0);
  assert.match(ran.stdout, /^\[0\] result: \["-n","100","--foo","bar"\]$/m);
  const launched = await tsccl('launch', '--nproc_per_node', '2', '--master_port=0', echoArgs, '--nproc_per_node', '7');
  assert.equal(launched.code, 0);
  assert.match(launched.stdout, /^\[0\] result: \["--nproc_per_node","7"\]$/m);
  assert.doesNotMatch(launched.stdout, /^\[2\]/m);
});
