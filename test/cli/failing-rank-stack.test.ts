import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runTsccl } from '../harness/cli.js';

const tsccl = (...args: string[]) => runTsccl(args);

const dir = mkdtempSync(join(tmpdir(), 'tsccl-stack-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const throws = join(dir, 'throws.mjs');
writeFileSync(
  throws,
  'export default function ({ rank }) {\n  if (rank === 1) {\n    const x = undefined;\n    return x.length;\n  }\n}\n',
);
const syntax = join(dir, 'syntax.mjs');
writeFileSync(syntax, 'export default function () {\n  const a = ;\n}\n');
const importsSyntax = join(dir, 'imports-syntax.mjs');
writeFileSync(importsSyntax, "import './syntax.mjs';\nexport default () => 1;\n");

for (const launcher of [
  ['run', '-n', '2'],
  ['launch', '--nproc-per-node', '2'],
]) {
  test(`tsccl ${launcher[0]}: a rank's own TypeError is reported with its file and line`, async () => {
    const { code, stderr } = await tsccl(...launcher, throws);
    assert.equal(code, 1);
    assert.match(stderr, /Rank 1 failed: Cannot read properties of undefined/);
    assert.match(
      stderr,
      /Rank 1's stack:\n\s+TypeError: Cannot read properties of undefined \(reading 'length'\)\n\s+at .*throws\.mjs:4:14/,
    );
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
