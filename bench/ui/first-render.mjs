// Time to first render of the page's topology view, per preset, in Debian's chromium: from the
// start of navigation until the graph is drawn, and the graph's own drawing, medians of runs.
// Usage: node bench/ui/first-render.mjs [--runs 5] [preset[:nodes] ...]   (after npm run build)
import { existsSync, statSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { PRESET_NAMES } from '../../dist/src/topology/presets/presets.js';
import { PAGE_DIR, startUiServer } from '../../dist/src/ui/ui-server.js';

const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? Number(args.splice(runsAt, 2)[1]) : 5;
const targets = args.length > 0 ? args : [...PRESET_NAMES, 'dgx-h100:16', 'dgx-h100:64'];
const executablePath = [process.env.TSCCL_CHROMIUM, '/usr/bin/chromium'].find((p) => p && existsSync(p));
if (executablePath === undefined)
  throw new Error('chromium not found (apt-get install chromium, or set TSCCL_CHROMIUM)');

const assets = join(PAGE_DIR, 'assets');
const bytes = readdirSync(assets).reduce((sum, f) => sum + statSync(join(assets, f)).size, 0);
console.log(`# page: ${(bytes / 1024).toFixed(0)} KiB of script and style (${readdirSync(assets).join(', ')})`);
const server = await startUiServer({ port: 0, allowRemote: false, context: { benchFiles: [] } });
const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log('# topology            devices  first render ms  graph drawn ms   (medians of %d runs)', runs);
for (const target of targets) {
  const [topo, nodes] = target.split(':');
  const hash = `topo=${topo}&tp=1${nodes ? `&nodes=${nodes}` : ''}`;
  // The server simulates once and keeps the answer: a warm-up load leaves the runs to time the page.
  const first = [];
  const drawn = [];
  let devices = '';
  for (let run = -1; run < runs; run++) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.url}#${hash}`);
    const summary = await page.waitForSelector('[data-testid=topology-summary][data-since-page-start-ms]', {
      timeout: 600_000,
    });
    const text = await summary.textContent();
    devices = /(\d+) devices/.exec(text)[1];
    if (run >= 0) {
      first.push(Number(await summary.getAttribute('data-since-page-start-ms')));
      drawn.push(Number(/drawn in (\d+) ms/.exec(text)[1]));
    }
    await page.close();
  }
  console.log(
    `  ${target.padEnd(18)} ${devices.padStart(8)} ${median(first).toFixed(0).padStart(16)} ${median(drawn).toFixed(0).padStart(16)}`,
  );
}
await browser.close();
await server.close();
