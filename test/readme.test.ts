import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The README's blocks marked runnable (a fence with the info string `sh runnable`, optionally
// `requires=<tool>`) must work as written: each runs as one bash script from the clone's root.
const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const BLOCK_TIMEOUT_MS = 300_000;

interface RunnableBlock {
  readonly line: number;
  readonly script: string;
  readonly requires: string[];
}

function runnableBlocks(text: string): RunnableBlock[] {
  const blocks: RunnableBlock[] = [];
  for (const match of text.matchAll(/^```sh runnable([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const requires = [...match[1]!.matchAll(/requires=(\S+)/g)].map((m) => m[1]!);
    blocks.push({ line: text.slice(0, match.index).split('\n').length, script: match[2]!, requires });
  }
  return blocks;
}

// A line each block's output must hold, where one is cheap to name; the exit code is checked for all.
const EXPECTED: [block: RegExp, output: RegExp][] = [
  [/hello-allreduce\.mjs/, /x\[0\] = \d+ \(expected \d+\)/],
  [/tsccl\.js sim /, /# tsccl sim/],
  [/tsccl\.js params/, /TSCCL_TIMEOUT_MS/],
  [/tsccl\.js bench/, /Avg bus bandwidth/],
  [/train-ddp\.mjs/, /step \d+ loss \d+\.\d{3}/],
];

function hasTool(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

/** Runs a script in its own process group, so a timeout ends the ranks it started too. */
function runScript(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  return new Promise((done) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: root,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, BLOCK_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, output, timedOut });
    });
  });
}

/**
 * The environment of a user's shell: without the npm_* settings `npm test` exports to its
 * scripts (its local prefix is the clone), and with ignore-scripts, as `npm pack` of the clone
 * would otherwise rebuild dist/ under the running tests.
 */
function blockEnv(tmp: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  return { ...env, TMPDIR: tmp, npm_config_ignore_scripts: 'true', npm_config_update_notifier: 'false' };
}

const blocks = runnableBlocks(readme);

test('the README has runnable blocks to check', () => {
  assert.ok(blocks.length >= 5, `found ${blocks.length} runnable blocks`);
});

for (const block of blocks) {
  const first = block.script.split('\n')[0]!.replace(/\s+#.*$/, '');
  test(`README.md:${block.line} runs as written: ${first}`, { timeout: BLOCK_TIMEOUT_MS + 10_000 }, async (t) => {
    const missing = block.requires.filter((tool) => !hasTool(tool));
    if (missing.length > 0) {
      t.skip(`${missing.join(', ')} not installed`);
      console.log(`# skipped README.md:${block.line}: ${missing.join(', ')} not installed`);
      return;
    }
    const tmp = mkdtempSync(join(tmpdir(), 'tsccl-readme-'));
    try {
      const { code, output, timedOut } = await runScript(block.script, blockEnv(tmp));
      assert.ok(!timedOut, `README.md:${block.line} still ran after ${BLOCK_TIMEOUT_MS / 1000} s:\n${output}`);
      assert.equal(code, 0, `README.md:${block.line} exited with ${code}:\n${output}`);
      for (const [pattern, expected] of EXPECTED) {
        if (pattern.test(block.script)) assert.match(output, expected, `README.md:${block.line}`);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
}
