import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const bin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tsccl-stack-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const throws = join(dir, 'throws.mjs');
writeFileSync(throws, 'export default function ({ rank }) {\n  if (rank === 1) {\n    const x = undefined;\n    return x.length;\n  }\n}\n');
const syntax = join(dir, 'syntax.mjs');
writeFileSync(syntax, 'export default function () {\n  const a = ;\n}\n');
const importsSyntax = join(dir, 'imports-syntax.mjs');
writeFileSync(importsSyntax, "import './syntax.mjs';\nexport default () => 1;\n");

async function tsccl(...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [bin, ...args], { timeout: 120_000 });
    return { code: 0, stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

for (const launcher of [['run', '-n', '2'], ['launch', '--nproc-per-node', '2']]) {
  test(`tsccl ${launcher[0]}: a rank's own TypeError is reported with its file and line`, async () => {
    const { code, stderr } = await tsccl(...launcher, throws);
    assert.equal(code, 1);
    assert.match(stderr, /Rank 1 failed: Cannot read properties of undefined/);
    assert.match(stderr, /Rank 1's stack:\n\s+TypeError: Cannot read properties of undefined \(reading 'length'\)\n\s+at .*throws\.mjs:4:14/);
  });

  test(`tsccl ${launcher[0]}: a syntax error, in the script or in a module it imports, shows file:line and the caret`, async () => {
    for (const script of [syntax, importsSyntax]) {
      const { code, stderr } = await tsccl(...launcher, script);
      assert.equal(code, 1);
      assert.match(stderr, /failed: Unexpected token ';'/);
      assert.match(stderr, /syntax\.mjs:2\n\s+const a = ;\n\s+\^/);
    }
  });
}
