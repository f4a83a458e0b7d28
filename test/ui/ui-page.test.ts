/// <reference lib="dom" />
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type UiServer, startUiServer } from '../../src/ui/ui-server.js';
import { runTsccl } from '../harness/cli.js';
import { runFixture } from '../harness/ranks.js';
import { trained } from '../train/train-harness.js';

/** Debian's chromium (.ci/run installs it), or the one TSCCL_CHROMIUM names. */
const chromiumPath = [process.env.TSCCL_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (p) => p !== undefined && existsSync(p),
);
const skip = chromiumPath === undefined ? 'chromium not found (Debian chromium; .ci/run installs it)' : undefined;
if (skip) console.log(`# browser tests of the page skipped: ${skip}`);

/** Screenshots land here: TSCCL_UI_SCREENSHOTS (the README's images are made so), else a temporary directory. */
const shots = process.env.TSCCL_UI_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'tsccl-ui-shots-'));
const work = mkdtempSync(join(tmpdir(), 'tsccl-ui-test-'));
let browser: Browser;
let server: UiServer;
let benchFile: string;
let benchRows: { bytes: number; inPlace: boolean }[];

before(async () => {
  if (skip) return;
  // A measured file to overlay: a real run of tsccl bench on thread ranks.
  const bench = await runTsccl(['bench', '-n', '2', '-b', '1K', '-e', '64K', '-f', '4', '--format', 'json']);
  assert.equal(bench.code, 0, bench.stderr);
  benchFile = join(work, 'bench-2-threads.json');
  writeFileSync(benchFile, bench.stdout);
  benchRows = (JSON.parse(bench.stdout) as { rows: { bytes: number; inPlace: boolean }[] }).rows;
  // A stuck job's flight records: rank 2 never makes the call ranks 0 and 1 wait in.
  const traceDir = join(work, 'traces');
  mkdirSync(traceDir);
  await runFixture('trace-rank', 3, {}, { env: { ...process.env, TSCCL_TRACE_DIR: traceDir, TSCCL_DEBUG: 'NONE' } });
  // A measured training run's trace: two data-parallel ranks, two steps of the tiny GPT.
  const trainTrace = join(work, 'ddp-2.json');
  await trained(2, { steps: 2, trace: trainTrace });
  server = await startUiServer({
    port: 0,
    allowRemote: false,
    context: { benchFiles: [benchFile], traceDir, trainTraces: [trainTrace] },
  });
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
});

after(async () => {
  await browser?.close();
  await server?.close();
  rmSync(work, { recursive: true, force: true });
});

async function open(hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('close', () => assert.deepEqual(errors, [], 'the page threw'));
  await page.goto(`${server.url}#${hash}`);
  return page;
}

/** The cells of a table column, by header text, once the table is there. */
async function column(page: Page, table: string, header: string): Promise<string[]> {
  await page.waitForSelector(`[data-testid=${table}] tbody tr`, { timeout: 120_000 });
  return page.$$eval(
    `[data-testid=${table}]`,
    ([el], name) => {
      const t = el as HTMLTableElement;
      const index = Array.from(t.tHead!.rows[0].cells).findIndex((c) => c.textContent === name);
      return Array.from(t.tBodies[0].rows).map((r) => r.cells[index]?.textContent ?? '');
    },
    header,
  );
}

test('topology view: on a full-mesh Ascend server TP=4 keeps 3 of 7 links of each NPU busy; behind NVSwitch TP=8 uses all 18', {
  skip,
}, async () => {
  const page = await open('topo=ascend-910b&tp=4');
  assert.deepEqual(await column(page, 'link-table', 'scale-up links busy'), Array(8).fill('3/7'));
  await page.waitForSelector('[data-testid=topology-summary]:has-text("drawn in")');
  await page.screenshot({ path: join(shots, 'topology-ascend-tp4.png'), fullPage: true });
  await page.goto(`${server.url}#tp=8`);
  await page.waitForSelector('[data-testid=topology-summary]:has-text("dgx-h100")');
  await page.waitForSelector('[data-testid=link-table] h2, [data-testid=link-table]');
  await page.waitForFunction(
    () => document.querySelector('[data-testid=link-table] td[data-family="scale-up"]')?.textContent === '18/18',
  );
  assert.deepEqual(await column(page, 'link-table', 'scale-up links busy'), Array(8).fill('18/18'));
  await page.close();
});

test('timeline view: an 8-rank ring all-reduce shows 14 steps per rank, steps through them, and exports a Chrome trace', {
  skip,
}, async () => {
  const page = await open('view=timeline&algo=ring');
  assert.deepEqual(await column(page, 'step-table', 'steps'), Array(8).fill('14'));
  await page.waitForSelector('[data-testid=timeline-summary]:has-text("14 steps per rank")');
  assert.match((await page.textContent('[data-testid=bottleneck]')) ?? '', /nvswitch/);
  await page.click('text=next step ▶');
  await page.waitForSelector('[data-testid=step-label]:text-is("step 2 of 14")');
  // Step 2 of rank 0 receives and reduces from its left neighbour, rank 7.
  assert.match((await column(page, 'step-table', 'step 2: what it moves'))[0], /receive and reduce from 7/);
  await page.screenshot({ path: join(shots, 'timeline-ring.png'), fullPage: true });
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('text=export Chrome/Perfetto trace'),
  ]);
  const trace = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { traceEvents: { ph: string }[] };
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, 8 * 14);
  await page.close();
});

test('curves view: predicted curves for every algorithm and protocol, with a measured bench file overlaid row by row', {
  skip,
}, async () => {
  const page = await open('view=curves');
  assert.deepEqual(
    await column(page, 'measured-table', 'size'),
    benchRows.map((r) => `${r.bytes / 1024} KiB`),
  );
  assert.deepEqual(
    await column(page, 'measured-table', 'in place'),
    benchRows.map((r) => (r.inPlace ? 'yes' : 'no')),
  );
  await page.waitForSelector('[data-testid=curves-summary]:has-text("1 measured file")');
  assert.ok((await page.$$('figure svg, .figure svg')).length >= 2, 'two charts drawn');
  await page.screenshot({ path: join(shots, 'curves.png'), fullPage: true });
  await page.close();
});

test('training view: per-group communication and the pipeline bubble of a TP x PP x DP step', { skip }, async () => {
  const page = await open('view=train&nodes=4&pp=4');
  assert.deepEqual(await column(page, 'train-table', 'group'), ['tp', 'pp']);
  const parts = (await page.textContent('[data-testid=train-parts]')) ?? '';
  assert.match(parts, /pipeline bubble: [\d.]+ ms/);
  assert.match(parts, /TP communication \(exposed\): [\d.]+ ms/);
  // The measured run beside the prediction: both ranks, with compute and the wait for gradients.
  assert.deepEqual(await column(page, 'measured-train-table', 'rank'), ['0', '1']);
  for (const cell of await column(page, 'measured-train-table', 'compute')) assert.match(cell, /^[\d.]+ ms$/);
  assert.ok(
    (await column(page, 'measured-train-table', 'data: collectives (overlapping)')).every((c) => /^\d+ calls/.test(c)),
  );
  await page.screenshot({ path: join(shots, 'train.png'), fullPage: true });
  await page.close();
});

test('job view: the flight records of a hung job name the call and the rank that never arrived', { skip }, async () => {
  const page = await open('view=job');
  await page.waitForSelector('[data-testid=stuck]', { timeout: 60_000 });
  assert.match(
    (await page.textContent('[data-testid=stuck]')) ?? '',
    /reduce\(float64, count 4, max, root 1\).*never reached by ranks 2/,
  );
  await page.screenshot({ path: join(shots, 'job.png'), fullPage: true });
  await page.close();
});

test('keyboard and permalink: arrow keys move between tabs and the URL holds the view; the dark theme switches', {
  skip,
}, async () => {
  const page = await open('topo=ascend-910b&tp=4');
  await page.waitForSelector('[data-testid=link-table]');
  await page.focus('#tab-topology');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => location.hash.includes('view=curves'));
  await page.waitForSelector('#tab-curves[aria-selected="true"]');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'tab-curves');
  // The permalink opens the same view with the same topology.
  const permalink = page.url();
  const again = await browser.newPage();
  await again.goto(permalink);
  await again.waitForSelector('[data-testid=curves-summary]:has-text("ascend-910b")', { timeout: 120_000 });
  await again.close();
  // The theme is applied by an effect after the next render: wait for it, not for a guessed time.
  await page.click('button.theme');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await page.click('#tab-topology');
  await page.waitForSelector('[data-testid=topology-summary]:has-text("drawn in")', { timeout: 120_000 });
  await page.screenshot({ path: join(shots, 'topology-dark.png'), fullPage: true });
  await page.close();
});

test('tsccl ui --out writes one file that opens from disk with no server and no network, and shows the same data', {
  skip,
}, async () => {
  const file = join(work, 'report.html');
  const out = await runTsccl(['ui', '--out', file, '--topo', 'ascend-910b', '--view', 'tp=4']);
  assert.equal(out.code, 0, out.stderr);
  const page = await browser.newPage();
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(file).href);
  assert.deepEqual(await column(page, 'link-table', 'scale-up links busy'), Array(8).fill('3/7'));
  await page.click('#tab-timeline');
  await page.waitForSelector('[data-testid=timeline-summary]');
  assert.deepEqual(
    requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:') && !u.startsWith('blob:')),
    [],
  );
  await page.screenshot({ path: join(shots, 'static-report.png'), fullPage: true });
  await page.close();
});

test('the largest preset draws, and its time to first render is reported', { skip }, async () => {
  const page = await open('topo=gb200-nvl72&tp=72');
  const summary = await page.waitForSelector('[data-testid=topology-summary]:has-text("drawn in")', {
    timeout: 120_000,
  });
  const text = (await summary.textContent()) ?? '';
  assert.match(text, /gb200-nvl72: 72 accelerators/);
  console.log(`# ${text}`);
  await page.screenshot({ path: join(shots, 'topology-nvl72.png'), fullPage: true });
  await page.close();
});
