import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createGpt, loadTf, modelSpec, parameterCount, writeModelSpec } from '../../src/train/index.js';
import { runTsccl } from '../harness/cli.js';

test('a trained model’s shape goes to tsccl sim train --model-file, which prices its gradient reduction; a bad file is refused', async () => {
  const tf = await loadTf();
  const model = createGpt(tf, { vocabSize: 24, seqLen: 16, dim: 32, heads: 2, layers: 2 });
  assert.deepEqual(modelSpec(model, 'tiny'), {
    name: 'tiny',
    layers: 2,
    hidden: 32,
    sequence: 16,
    parameters: parameterCount(model),
    experts: 0,
    topK: 0,
    activeParameters: parameterCount(model),
  });
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-model-'));
  try {
    const path = join(dir, 'model.json');
    await writeModelSpec(model, path, 'tiny');
    const run = await runTsccl([
      'sim',
      'train',
      '--model-file',
      path,
      '--topo',
      'local',
      '--dp',
      '2',
      '--grad-bytes',
      '4',
      '--format',
      'json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as {
      model: { name: string };
      collectives: { group: string; bytesPerCall: number; timePerCallUs: number }[];
    };
    assert.equal(report.model.name, 'tiny');
    const dp = report.collectives.find((c) => c.group === 'dp');
    assert.equal(dp?.bytesPerCall, parameterCount(model) * 4);
    assert.ok((dp?.timePerCallUs ?? 0) > 0);
    writeFileSync(path, JSON.stringify({ name: 'broken', hidden: 32 }));
    const bad = await runTsccl(['sim', 'train', '--model-file', path, '--topo', 'local', '--dp', '2']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /TSCCL_ERR_INVALID_ARGUMENT.*--model-file.*layers/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
