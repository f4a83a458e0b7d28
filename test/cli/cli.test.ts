import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { runTsccl, tscclBin } from '../harness/cli.js';

const bin = tscclBin;
const example = fileURLToPath(new URL('../../../examples/hello-allreduce.mjs', import.meta.url));
/** Runs the CLI, killing it after `timeoutMs` (code null then), with `env` added to this process's. */
const cli =
  (timeoutMs: number, env: Record<string, string> = {}) =>
  (...args: string[]) =>
    runTsccl(args, { env, timeoutMs });
// Bounds only end a hung command; a loaded machine may take minutes where an idle one takes seconds.
const tsccl = cli(300_000);
// tune measures for about 55 s on an idle 2-core machine, over 120 s beside one busy process, and
// ran past 600 s beside a CPU hog on a shared machine: the bound only ends a hang.
const patientTsccl = cli(1_800_000);

test('tsccl bench --format json: one document with nccl-tests rows, all correct', async () => {
  const { code, stdout } = await tsccl(
    'bench',
    '-o',
    'all_gather',
    '-g',
    '3',
    '-b',
    '1K',
    '-e',
    '64K',
    '-f',
    '8',
    '-n',
    '3',
    '-w',
    '1',
    '--format',
    'json',
  );
  assert.equal(code, 0);
  const doc = JSON.parse(stdout) as { rows: Record<string, unknown>[]; wrong: number };
  assert.equal(doc.rows.length, 6); // 1K, 8K, 64K x out-of-place, in-place
  for (const row of doc.rows) {
    for (const key of [
      'op',
      'bytes',
      'count',
      'dtype',
      'redop',
      'root',
      'inPlace',
      'timeUs',
      'algbwGBs',
      'busbwGBs',
      'wrong',
    ])
      assert.ok(key in row, key);
    assert.equal(row.wrong, 0);
    assert.ok((row.timeUs as number) > 0);
  }
  assert.equal(doc.rows[0].count, 84); // floor(256 / (4 * 3)) * 4 elements per rank
});

test('tsccl bench prints the nccl-tests table with both placements and the average busbw', async () => {
  const { code, stdout } = await tsccl(
    'bench',
    '-o',
    'reduce_scatter',
    '-g',
    '2',
    '-b',
    '8K',
    '-e',
    '8K',
    '-d',
    'bfloat16',
    '-R',
    'max',
    '-n',
    '2',
    '-w',
    '0',
  );
  assert.equal(code, 0);
  assert.match(
    stdout,
    /#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong\s+time\s+algbw\s+busbw\s+#wrong/,
  );
  assert.match(
    stdout,
    /^\s+8192\s+2048\s+bfloat16\s+max\s+-1\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+0\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+0$/m,
  );
  assert.match(stdout, /# Avg bus bandwidth\s+: [\d.]+/);
  assert.match(
    stdout,
    /warmup iters: 0 \(4000 up to 256 KiB\) iters: 2/,
    'small sizes warm up 4000 calls by default, and the header says so',
  );
});

test('a call that runs past its timeout while its data still moves says so, not that the ranks called it differently', async () => {
  // 64-byte pieces make an 8 MB all-reduce of 2 processes 262144 steps, far more than 1 s.
  const slow = await cli(300_000, { TSCCL_CHUNK_BYTES: '64' })(
    'bench',
    '--procs',
    '-o',
    'all_reduce',
    '-g',
    '2',
    '-b',
    '8M',
    '-e',
    '8M',
    '-n',
    '1',
    '-w',
    '0',
    '--timeout-ms',
    '1000',
  );
  assert.equal(slow.code, 1);
  assert.match(slow.stderr, /TSCCL_ERR_TIMEOUT|timed out after \d+ ms \(timeout 1000 ms\)/);
  assert.match(slow.stderr, /every rank arrived and the data was still moving \(\d+ of its steps done on this rank/);
  assert.doesNotMatch(slow.stderr, /different arguments/);
});

test('a bad TSCCL_* setting is refused as a bad flag is, not with a stack', async () => {
  // The library reads these as its modules load, before the command parses anything.
  const refusal = (env: Record<string, string>) =>
    cli(300_000, env)('bench', '-o', 'all_reduce', '-g', '2', '-b', '8', '-e', '8');
  for (const [env, stderr] of [
    [
      { TSCCL_ALGO: 'allreduce:bogus' },
      "tsccl: TSCCL_ERR_INVALID_ARGUMENT: TSCCL_ALGO 'bogus' is not available for allReduce: expected one of ring, recursive_doubling, direct, hierarchical, tree, one_shot\n",
    ],
    [
      { TSCCL_CHUNK_BYTES: '4M' },
      'tsccl: TSCCL_ERR_INVALID_ARGUMENT: TSCCL_CHUNK_BYTES=4M must be an integer of at least 1\n',
    ],
    // A piece of 0 bytes once ran as pieces of one element: an 8 MB call of 2 million steps.
    [
      { TSCCL_CHUNK_BYTES: '0' },
      'tsccl: TSCCL_ERR_INVALID_ARGUMENT: TSCCL_CHUNK_BYTES=0 must be an integer of at least 1\n',
    ],
  ] as const) {
    const refused = await refusal(env);
    assert.equal(refused.code, 1, JSON.stringify(env));
    assert.equal(refused.stderr, stderr);
  }
});

test('tsccl bench refuses bad flags with a clear message', async () => {
  const bad = await tsccl('bench', '-o', 'all_sum');
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /Unknown bench op 'all_sum'/);
  const root = await tsccl('bench', '-o', 'broadcast', '-g', '2', '-r', '5', '-b', '8', '-e', '8');
  assert.notEqual(root.code, 0);
  assert.match(root.stderr, /--root 5 must be below --ranks 2/);
  const avg = await tsccl('bench', '-d', 'int32', '-R', 'avg', '-g', '2', '-b', '8', '-e', '8');
  assert.notEqual(avg.code, 0);
  assert.match(avg.stderr, /^tsccl: TSCCL_ERR_INVALID_ARGUMENT: --op-reduce 'avg' needs a floating dtype, got int32$/m);
  // Refused before any rank starts, not as every rank's failure at its first call.
  const algo = await tsccl('bench', '-o', 'gather', '--algo', 'pairwise', '-g', '2', '-b', '8', '-e', '8');
  assert.notEqual(algo.code, 0);
  assert.match(
    algo.stderr,
    /^tsccl: TSCCL_ERR_INVALID_ARGUMENT: --algo 'pairwise' is not available for gather: expected one of linear, one_shot$/m,
  );
  // The one-shot path holds a whole message in a slot: a sweep past it is refused up front too.
  const oneShot = await tsccl('bench', '-o', 'all_gather', '--algo', 'one_shot', '-g', '4', '-b', '8', '-e', '512K');
  assert.notEqual(oneShot.code, 0);
  assert.match(
    oneShot.stderr,
    /^tsccl: TSCCL_ERR_INVALID_ARGUMENT: --algo one_shot carries messages of at most 65536 bytes on thread ranks; at -e 524288 a rank's all_gather message is 131072 bytes: lower --maxbytes$/m,
  );
});

test('tsccl run starts the example as 4 ranks with prefixed output', async () => {
  const { code, stdout } = await tsccl('run', '-n', '4', example);
  assert.equal(code, 0);
  for (let r = 0; r < 4; r++)
    assert.match(stdout, new RegExp(`^\\[${r}\\] rank ${r} of 4: x\\[0\\] = 6 \\(expected 6\\)$`, 'm'));
  assert.match(stdout, /^\[3\] rank 3: tp group 1 rank 1\/2, max rank in group = 3$/m);
});

test('tsccl run reports a failing rank and exits non-zero', async () => {
  const { code, stderr } = await tsccl(
    'run',
    '-n',
    '2',
    fileURLToPath(new URL('../fixtures/throws-rank.js', import.meta.url)),
  );
  assert.equal(code, 1);
  assert.match(stderr, /TSCCL_ERR_RANK_FAILED: Rank 1 failed: rank 1 refuses/);
});

test('tsccl params lists every TSCCL_* variable', async () => {
  const { code, stdout } = await tsccl('params', '--format', 'json');
  assert.equal(code, 0);
  const names = (JSON.parse(stdout) as { params: { name: string }[] }).params.map((p) => p.name);
  assert.ok(names.includes('TSCCL_TIMEOUT_MS') && names.includes('TSCCL_ALGO'));
});

test('the elastic example loses a rank and the survivors finish on 3 ranks (threads and processes)', async () => {
  const elastic = fileURLToPath(new URL('../../../examples/elastic-dp.mjs', import.meta.url));
  for (const args of [
    ['run', '-n', '4', elastic],
    ['launch', '--nproc-per-node', '4', elastic],
  ]) {
    const { code, stdout, stderr } = await tsccl(...args);
    assert.equal(code, 1); // the launcher reports the crashed rank
    assert.match(stderr, /Rank 3 failed: Rank 3 exited with code 1/);
    // Rank 3 died: no survivor's message calls it, or a survivor, absent.
    assert.doesNotMatch(stderr, /did not arrive/);
    for (const r of [0, 1, 2]) {
      assert.match(stdout, new RegExp(`^\\[${r}\\] rank ${r}: lost rank 3 in step 3; going on without it$`, 'm'));
      assert.match(stdout, new RegExp(`^\\[${r}\\] rank ${r}: step 5 on 3 ranks, mean gradient 2$`, 'm'));
    }
  }
});

test('tsccl topo show / schema and tsccl sim print tables and JSON', async () => {
  const show = await tsccl('topo', 'show', 'ascend-910b', '--format', 'json');
  assert.equal(show.code, 0);
  assert.equal(JSON.parse(show.stdout).devices.filter((d: { kind: string }) => d.kind === 'npu').length, 8);
  const schema = await tsccl('topo', 'schema');
  assert.equal(JSON.parse(schema.stdout).title, 'tsccl topology');
  const sim = await tsccl(
    'sim',
    '--topo',
    'dgx-a100',
    '-o',
    'all_reduce',
    '-b',
    '1M',
    '-e',
    '64M',
    '-f',
    '8',
    '--format',
    'json',
  );
  assert.equal(sim.code, 0, sim.stderr);
  const doc = JSON.parse(sim.stdout);
  assert.equal(doc.rows.length, 3);
  for (const row of doc.rows)
    for (const key of ['bytes', 'count', 'timeUs', 'algbwGBs', 'busbwGBs', 'algorithm', 'protocol'])
      assert.ok(key in row, key);
  // A preset predicts what its vendor's library runs, and says so.
  assert.equal(doc.library, 'nccl');
  const header = await tsccl('sim', '--topo', 'dgx-a100', '-o', 'all_reduce', '-b', '1M', '-e', '1M');
  assert.match(header.stdout, /^# choosing among the algorithms NCCL runs \(--algo for any other\)/m);
  assert.match(header.stdout, /\s1048576\s.*\sring\s/);
  // Consumer GPUs: the staged route's CPU memory is the bottleneck a user sees.
  const staged = await tsccl(
    'sim',
    '--topo',
    'pcie-server',
    '--p2p',
    'off',
    '--gpus-per-switch',
    '1',
    '-o',
    'all_reduce',
    '-b',
    '1G',
    '-e',
    '1G',
    '--algo',
    'ring',
  );
  assert.equal(staged.code, 0, staged.stderr);
  assert.match(staged.stdout, /\sring\s.*cpu\d \(staging\) staging/);
  const table = await tsccl('sim', 'links', '--topo', 'ascend-910b', '--tp', '4');
  assert.match(table.stdout, /npu0\s+0\s+scale-up 3\/7/);
  const bad = await tsccl('sim', '--topo', 'dgx-a100', '--algo', 'nvls');
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /TSCCL_ERR_INVALID_ARGUMENT: --algo nvls is not available/);
  // A layout that leaves accelerators without a group is refused, as Megatron-LM refuses it.
  const uneven = await tsccl('sim', 'links', '--topo', 'ascend-910b', '--tp', '3');
  assert.equal(uneven.code, 1);
  assert.match(
    uneven.stderr,
    /TSCCL_ERR_INVALID_ARGUMENT: tp 3 x pp 1 = 3 does not divide the 8 accelerators: give --dp/,
  );
  // 350 GB of gradients over loopback TCP: hours per step, and every column still stands apart.
  const train = await tsccl('sim', 'train', '--topo', 'local', '-g', '16', '--procs');
  assert.equal(train.code, 0, train.stderr);
  assert.match(train.stdout, /^\s+dp\s+16\s+all_reduce\s+1\s+350000\.00\s+\d+\.\d\s+\d+\.\d\d\s+direct\s/m);
});

test('tsccl sim --in-place times the in-place schedules where ranks run tsccl, and refuses sendrecv', async () => {
  const row = async (...args: string[]) => {
    const out = await tsccl('sim', '-o', 'all_reduce', '-b', '8M', '-e', '8M', '--format', 'json', ...args);
    assert.equal(out.code, 0, out.stderr);
    return (JSON.parse(out.stdout) as { rows: { inPlace: boolean; timeUs: number }[] }).rows[0];
  };
  // Recursive doubling in place lands in scratch and copies back: more work on any profile.
  const local = ['--topo', 'local', '-g', '2', '--algo', 'recursive_doubling'];
  const [outOfPlace, inPlace] = [await row(...local), await row(...local, '--in-place')];
  assert.deepEqual([outOfPlace.inPlace, inPlace.inPlace], [false, true]);
  assert.ok(inPlace.timeUs > outOfPlace.timeUs, `${inPlace.timeUs} <= ${outOfPlace.timeUs}`);
  // An accelerator library's in-place call costs what its out-of-place one does.
  const gpus = ['--topo', 'dgx-h100'];
  assert.equal((await row(...gpus, '--in-place')).timeUs, (await row(...gpus)).timeUs);
  const table = await tsccl('sim', '--topo', 'local', '-g', '2', '-b', '1M', '-e', '1M', '--in-place');
  assert.match(table.stdout, /^# tsccl sim all_reduce in place on local/m);
  const bad = await tsccl('sim', '--topo', 'local', '-g', '2', '-o', 'sendrecv', '--in-place');
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /TSCCL_ERR_INVALID_ARGUMENT: --in-place does not apply to sendrecv/);
});

test('tsccl topo detect and tsccl tune: this machine measured into a profile that --topo local reads', async () => {
  const detect = await tsccl('topo', 'detect', '--format', 'json');
  assert.equal(detect.code, 0, detect.stderr);
  assert.ok(JSON.parse(detect.stdout).cores >= 1);
  const out = `${tmpdir()}/tsccl-profile-${process.pid}.json`;
  try {
    const tune = await patientTsccl('tune', '--runs', '1', '--out', out, '--format', 'json');
    assert.equal(tune.code, 0, tune.stderr);
    const { profile } = JSON.parse(tune.stdout);
    assert.ok(
      profile.shm.copyGBps > 0 &&
        profile.shm.peerWrittenGBps > 0 &&
        profile.shm.releaseUs >= 0 &&
        profile.tcp.gbps > 0 &&
        profile.reduceGBps > 0 &&
        profile.measuredAt !== null,
    );
    // What overwriting a peer's reads costs, by what the reader touched: one tier per piece size, growing.
    const tiers: { bytes: number; nsPerByte: number }[] = profile.shm.invalidationTiers;
    assert.ok(
      tiers.length >= 2 && tiers.every((t, i) => t.nsPerByte >= 0 && (i === 0 || t.bytes > tiers[i - 1].bytes)),
      JSON.stringify(tiers),
    );
    // TCP's rate by message size: 128 KiB to 8 MiB, by 4.
    const sizeTiers: { bytes: number; gbps: number }[] = profile.tcp.sizeTiers;
    assert.deepEqual(
      sizeTiers.map((t) => t.bytes),
      [128, 512, 2048, 8192].map((k) => k * 1024),
    );
    assert.ok(
      sizeTiers.every((t) => t.gbps > 0),
      JSON.stringify(sizeTiers),
    );
    process.env.TSCCL_PROFILE = out;
    const sim = await tsccl(
      'sim',
      '--topo',
      'local',
      '-g',
      '2',
      '-o',
      'all_reduce',
      '-b',
      '64K',
      '-e',
      '1M',
      '-f',
      '4',
      '--format',
      'json',
    );
    assert.equal(sim.code, 0, sim.stderr);
    assert.equal(JSON.parse(sim.stdout).rows.length, 3);
  } finally {
    delete process.env.TSCCL_PROFILE;
    rmSync(out, { force: true });
  }
});

test('a reader that closes the pipe early ends tsccl quietly, not with an EPIPE crash', async () => {
  // `head -c 10` exits after 10 bytes of a 200 KB document; pipefail reports tsccl's own status.
  const command = `set -o pipefail; "${process.execPath}" "${bin}" topo show gb200-nvl72 --nodes 4 --format json | head -c 10 > /dev/null`;
  const { stderr } = await promisify(execFile)('bash', ['-c', command]).catch(
    (err: { code: number; stderr: string }) => {
      assert.fail(`exit ${err.code}: ${err.stderr.split('\n').slice(0, 5).join('\n')}`);
    },
  );
  assert.doesNotMatch(stderr, /EPIPE/);
});
