import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTsccl } from '../harness/cli.js';

// Bounds only end a hung command; a loaded machine may take minutes where an idle one takes seconds.
const tsccl = (...args: string[]) => runTsccl(args, { env: {}, timeoutMs: 300_000 });

test('tsccl bench --compression adds the encoded bytes and the largest error, and refuses what it cannot compress', async () => {
  const { code, stdout, stderr } = await tsccl(
    'bench',
    ...['-o', 'all_reduce', '-g', '2', '-b', '256K', '-e', '1M', '-f', '4', '-n', '2', '-w', '1'],
    ...['--compression', 'int8', '--format', 'json'],
  );
  assert.equal(code, 0, stderr);
  const rows = JSON.parse(stdout).rows as { bytes: number; wireBytes: number; maxError: number; wrong: number }[];
  assert.equal(rows.length, 4);
  for (const row of rows) {
    // int8 with a float32 scale per 256: 1 + 4/256 bytes per element, all-to-all plus all-gather.
    const elements = row.bytes / 4;
    assert.equal(row.wireBytes, elements * (1 + 4 / 256));
    // Integers from -10 to 10 summed: within the format's bound, and not exact.
    assert.ok(row.maxError > 0 && row.maxError <= 4 / 254, `max error ${row.maxError}`);
    assert.equal(row.wrong, 0);
  }
  const table = await tsccl(
    'bench',
    '-o',
    'broadcast',
    '-g',
    '2',
    '-b',
    '64K',
    '-e',
    '64K',
    '-n',
    '1',
    '-w',
    '0',
    '--compression',
    'bf16',
  );
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^# compression: bf16/m);
  assert.match(table.stdout, /wire\s+maxerr\s+time/);
  const refused = await tsccl('bench', '-o', 'alltoall', '--compression', 'int8');
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /--compression applies to all_reduce, reduce_scatter, reduce, all_gather, broadcast, not alltoall/,
  );
  const unknown = await tsccl('bench', '--compression', 'int3');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /--compression format 'int3' is unknown/);
});

test('tsccl sim --compression prices the encoded bytes on the links and the codecs: it pays across slow NICs', async () => {
  const sim = (...extra: string[]) =>
    tsccl(
      'sim',
      ...['--topo', 'dgx-a100', '--nodes', '2', '--nic-gbps', '10', '-o', 'all_reduce', '-b', '256M', '-e', '256M'],
      ...['--mode', 'analytical', '--format', 'json', ...extra],
    );
  const plain = await sim();
  const compressed = await sim('--compression', 'int8');
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(compressed.code, 0, compressed.stderr);
  const [p] = JSON.parse(plain.stdout).rows;
  const [c] = JSON.parse(compressed.stdout).rows;
  assert.equal(c.compression, 'int8/256');
  // 2 servers of 8 GPUs: each server reduce-scatters uncompressed over NVLink, then the GPUs holding
  // the same eighth on the two servers exchange its 2 encoded halves and gather the 2 sums.
  assert.match(c.algorithm, /^int8\/256 reduce_scatter:\w+\+alltoall:\w+\+all_gather:\w+\+all_gather:\w+$/);
  assert.ok(c.codecUs > 0 && c.wireUs > 0);
  assert.equal(c.ranks, 16);
  const chunk = ((256 * 2 ** 20) / 4 / 8 / 2) * (1 + 4 / 256);
  assert.equal(c.wireBytes, 2 * 2 * chunk);
  assert.ok(c.timeUs < p.timeUs / 2, `compressed ${c.timeUs} us, plain ${p.timeUs} us`);
  // One GPU per server: the flat schedule, every rank's chunks across the network.
  const flat = await tsccl(
    'sim',
    ...[
      '--topo',
      'dgx-a100',
      '--nodes',
      '4',
      '-g',
      '1',
      '--nic-gbps',
      '10',
      '-o',
      'all_reduce',
      '-b',
      '256M',
      '-e',
      '256M',
    ],
    ...['--mode', 'analytical', '--format', 'json', '--compression', 'int4'],
  );
  assert.equal(flat.code, 0, flat.stderr);
  const [f] = JSON.parse(flat.stdout).rows;
  assert.match(f.algorithm, /^int4\/256 alltoall:\w+\+all_gather:\w+$/);
  assert.equal(f.wireBytes, 2 * 4 * ((256 * 2 ** 20) / 4 / 4) * (0.5 + 4 / 256));
  const train = await tsccl(
    'sim',
    'train',
    ...[
      '--topo',
      'dgx-a100',
      '--nodes',
      '2',
      '--nic-gbps',
      '10',
      '--model',
      'gpt3-175b',
      '--tp',
      '8',
      '--pp',
      '1',
      '--dp',
      '2',
    ],
    ...['--mode', 'analytical', '--format', 'json', '--compression', 'bf16'],
  );
  assert.equal(train.code, 0, train.stderr);
  const dp = JSON.parse(train.stdout).collectives.filter((c: { group: string }) => c.group === 'dp');
  assert.ok(
    dp.length > 0 && dp.every((c: { algorithm: string }) => c.algorithm.startsWith('bf16 ')),
    JSON.stringify(dp),
  );
});
