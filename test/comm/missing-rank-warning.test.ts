import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const bin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));
const library = new URL('../../src/index.js', import.meta.url).href;
const marks = new URL('../harness/marks.js', import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), 'tsccl-missing-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Rank 1 stays away from the all-reduce until rank 0's call has timed out, so its peers wait for it.
const script = join(dir, 'late.mjs');
writeFileSync(
  script,
  `import { init } from ${JSON.stringify(library)};
import { mark, waitForMark } from ${JSON.stringify(marks)};
const comm = await init();
if (comm.rank === 1) {
  await waitForMark(${JSON.stringify(dir)}, 'rank-0-gave-up', { timeoutMs: 60_000 });
  process.exit(0);
}
try {
  await comm.allReduce(new Float32Array(4), { timeoutMs: 2000 });
} catch (err) {
  console.log('rank 0:', err.code);
} finally {
  mark(${JSON.stringify(dir)}, 'rank-0-gave-up');
}
`,
);

test('a collective waiting for a rank that never entered it warns once, naming the rank, before its timeout ends it', async () => {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, 'run', '-n', '2', script], {
    timeout: 120_000,
  }).catch((err: { stdout: string; stderr: string }) => err);
  const warnings = stderr.split('\n').filter((line) => /has waited/.test(line));
  assert.equal(warnings.length, 1, stderr);
  assert.match(
    warnings[0],
    /^\[0\] tsccl WARN allReduce #1 on rank 0 of world has waited \d+\.\d s: rank 1 did not arrive \(rank 1 last seen at #0\); it gives up after 2\.0 s/,
  );
  assert.match(stdout, /rank 0: TSCCL_ERR_TIMEOUT/);
});
