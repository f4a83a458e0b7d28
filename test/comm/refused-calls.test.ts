import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runTsccl } from '../harness/cli.js';

const library = new URL('../../src/index.js', import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), 'tsccl-refused-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Only rank 0 makes the refused calls; if one took a sequence number, the next all-reduce would
// pair rank 0's #2 with rank 1's #1 and time out.
const script = join(dir, 'refused.mjs');
writeFileSync(
  script,
  `import { init } from ${JSON.stringify(library)};
const comm = await init();
const seen = [];
if (comm.rank === 0) {
  for (const options of [{ algorithm: 'butterfly' }, { signal: AbortSignal.abort('early') }, { opp: 'max' }]) {
    try { await comm.allReduce(new Float32Array(4), options); seen.push('ran'); } catch (err) { seen.push(err.code); }
  }
}
const x = new Float32Array(4).fill(comm.rank + 1);
await comm.allReduce(x, { timeoutMs: 60_000 });
export default () => ({ seen, sum: x[0] });
`,
);

test('calls refused on one rank (unknown algorithm, an already aborted signal, an unknown option) leave its peers in step', async () => {
  const { code, stdout, stderr } = await runTsccl(['run', '-n', '2', script]);
  assert.equal(code, 0, stderr);
  assert.match(
    stdout,
    /^\[0\] result: \{"seen":\["TSCCL_ERR_INVALID_ARGUMENT","TSCCL_ERR_ABORTED","TSCCL_ERR_INVALID_ARGUMENT"\],"sum":3\}$/m,
  );
  assert.match(stdout, /^\[1\] result: \{"seen":\[\],"sum":3\}$/m);
});
