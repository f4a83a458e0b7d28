import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { resolveScript } from '../../src/launch/run.js';

const stripsTypes = Boolean((process.features as { typescript?: string | false }).typescript);

test('resolveScript gives the file: URL of a JavaScript module and refuses a missing one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-resolve-'));
  try {
    const js = join(dir, 'rank.mjs');
    writeFileSync(js, 'export default () => 1;\n');
    assert.equal(resolveScript(js), pathToFileURL(js).href);
    assert.equal(resolveScript(pathToFileURL(js).href), pathToFileURL(js).href);
    assert.throws(
      () => resolveScript(join(dir, 'missing.mjs')),
      (err: Error & { code: string }) =>
        err.code === 'TSCCL_ERR_INVALID_ARGUMENT' && /does not exist/.test(err.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Before, every rank failed with Node's "Unknown file extension \".ts\"" after the job had started.
test('resolveScript refuses a TypeScript script on a Node that does not strip types, and takes it on one that does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-resolve-'));
  try {
    for (const name of ['train.ts', 'train.mts', 'train.cts']) {
      const file = join(dir, name);
      writeFileSync(file, 'const x: number = 1;\nexport default () => x;\n');
      if (stripsTypes) {
        assert.equal(resolveScript(file), pathToFileURL(file).href);
      } else {
        assert.throws(
          () => resolveScript(file),
          (err: Error & { code: string }) =>
            err.code === 'TSCCL_ERR_INVALID_ARGUMENT' &&
            err.message.includes(name) &&
            /compile it first \(tsc\)/.test(err.message) &&
            /Node >= 22\.6 with --experimental-strip-types/.test(err.message),
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// A loader such as tsx's, started with `node --import tsx`, compiles .ts for the ranks too (they inherit the flag).
test('resolveScript takes a TypeScript script when a loader hook is given to Node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-resolve-'));
  try {
    const file = join(dir, 'train.ts');
    writeFileSync(file, 'export default () => 1;\n');
    const run = new URL('../../src/launch/run.js', import.meta.url).href;
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'data:text/javascript,',
        '--input-type=module',
        '-e',
        `const { resolveScript } = await import(${JSON.stringify(run)}); console.log(resolveScript(${JSON.stringify(file)}));`,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), pathToFileURL(file).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
