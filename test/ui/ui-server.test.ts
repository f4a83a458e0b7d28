import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { staticReport } from '../../src/ui/static-report.js';
import { isLoopback, startUiServer } from '../../src/ui/ui-server.js';
import { DEFAULT_STATE } from '../../src/ui/view-state.js';
import { runTsccl, tscclBin } from '../harness/cli.js';
import { waitFor } from '../harness/wait-for.js';

/** A GET with the path sent exactly as written (no normalisation of `..`). */
function get(host: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request({ host, port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

test('the page server serves its own files only: paths that climb out of the page are 404', async () => {
  const server = await startUiServer({ port: 0, allowRemote: false, context: { benchFiles: [] } });
  const port = Number(new URL(server.url).port);
  try {
    assert.equal((await get('127.0.0.1', port, '/')).status, 200);
    assert.match((await get('127.0.0.1', port, '/index.html')).body, /<div id="app">/);
    for (const path of [
      '/../package.json',
      '/../../package.json',
      '/%2e%2e/%2e%2e/package.json',
      '/assets/..%2f..%2f..%2fpackage.json',
      '/..%5c..%5cpackage.json',
      '/%00',
      '/assets',
    ])
      assert.equal((await get('127.0.0.1', port, path)).status, 404, path);
  } finally {
    await server.close();
  }
});

test('API refusals are JSON with the TscclError code and the parameter at fault', async () => {
  const server = await startUiServer({ port: 0, allowRemote: false, context: { benchFiles: [] } });
  const port = Number(new URL(server.url).port);
  try {
    const cases: [string, string][] = [
      ['/api/links?tp=x', 'tp'],
      ['/api/links?tp=3', '--tp'],
      ['/api/topology?topo=%2Fetc%2Fpasswd', 'topo'],
      ['/api/topology?color=red', 'color'],
      ['/api/timeline?algo=nvls', '--algo'],
      ['/api/nothing', 'api'],
      ['/api/links?ranks=0%2Cx', 'ranks'],
    ];
    for (const [path, argument] of cases) {
      const { status, body } = await get('127.0.0.1', port, path);
      assert.equal(status, 400, path);
      const { error } = JSON.parse(body) as { error: { code: string; argument: string } };
      assert.equal(error.code, 'TSCCL_ERR_INVALID_ARGUMENT', path);
      assert.equal(error.argument, argument, path);
    }
    const ok = JSON.parse((await get('127.0.0.1', port, '/api/links?topo=ascend-910b&tp=4')).body) as {
      devices: { used: Record<string, number> }[];
    };
    assert.deepEqual(
      ok.devices.map((d) => d.used['scale-up']),
      Array(8).fill(3),
    );
    // Explicit groups in place of a layout: a pair and a quartet on the full mesh.
    const explicit = JSON.parse(
      (await get('127.0.0.1', port, '/api/links?ranks=0%2C1%3B2%2C3%2C4%2C5&topo=ascend-910b')).body,
    ) as { groups: number[][]; devices: { device: string; used: Record<string, number> }[] };
    assert.deepEqual(explicit.groups, [
      [0, 1],
      [2, 3, 4, 5],
    ]);
    assert.deepEqual(
      explicit.devices.map((d) => `${d.device}:${d.used['scale-up']}`),
      ['npu0:1', 'npu1:1', 'npu2:3', 'npu3:3', 'npu4:3', 'npu5:3'],
    );
  } finally {
    await server.close();
  }
});

test('the server listens on loopback only unless allowed: another address of this machine cannot reach it', async () => {
  assert.ok(isLoopback('127.0.0.1') && isLoopback('::1') && isLoopback('::ffff:127.0.0.1'));
  assert.ok(!isLoopback('10.0.0.2') && !isLoopback('::ffff:192.168.1.4') && !isLoopback(undefined));
  const other = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && !a.internal && a.family === 'IPv4');
  const server = await startUiServer({ port: 0, allowRemote: false, context: { benchFiles: [] } });
  const port = Number(new URL(server.url).port);
  try {
    if (other === undefined) {
      console.log('# no non-loopback IPv4 address here: the refusal of other machines is checked by isLoopback only');
      return;
    }
    await assert.rejects(get(other.address, port, '/'), { code: 'ECONNREFUSED' });
  } finally {
    await server.close();
  }
});

test('a static report inlines its code and the answers of every view, and loads nothing from elsewhere', () => {
  const html = staticReport({ ...DEFAULT_STATE, topo: 'ascend-910b', tp: 4 }, { benchFiles: [] });
  assert.doesNotMatch(html, /<script[^>]+src=/);
  assert.doesNotMatch(html, /<link[^>]+stylesheet/);
  const data = JSON.parse(/window\.__TSCCL_DATA__=(.*?);window\.__TSCCL_STATE__/s.exec(html)![1]) as Record<
    string,
    unknown
  >;
  assert.ok('api/links?topo=ascend-910b&tp=4' in data, Object.keys(data).join(' '));
  assert.ok('api/timeline?topo=ascend-910b' in data);
  assert.equal(data['api/job'], null);
});

test('tsccl ui prints its URL, serves the page until interrupted, and refuses a file that is not what its option reads', async () => {
  const child = spawn(process.execPath, [tscclBin, 'ui', '--topo', 'ascend-910b'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  await waitFor(() => /http:\/\/127\.0\.0\.1:\d+\//.test(out), { what: 'the URL printed' });
  const url = new URL(/http:\/\/127\.0\.0\.1:\d+\/\S*/.exec(out)![0]);
  assert.equal(url.hash, '#topo=ascend-910b');
  assert.equal((await get('127.0.0.1', Number(url.port), '/')).status, 200);
  child.kill('SIGINT');
  assert.equal(await exited, 0);

  const dir = mkdtempSync(join(tmpdir(), 'tsccl-ui-cli-'));
  try {
    const notBench = join(dir, 'not-bench.json');
    writeFileSync(notBench, JSON.stringify({ tool: 'tsccl sim', rows: [] }));
    const refused = await runTsccl(['ui', '--bench', notBench, '--out', join(dir, 'r.html')]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /TSCCL_ERR_INVALID_ARGUMENT: --bench .*not-bench\.json is not the output of tsccl bench/,
    );
    assert.ok(!existsSync(join(dir, 'r.html')), 'nothing written');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a port in use, a port out of range and an unwritable --out are refused with the option named, nothing left running', async () => {
  const first = await startUiServer({ port: 0, allowRemote: false, context: { benchFiles: [] } });
  try {
    await assert.rejects(
      startUiServer({ port: Number(new URL(first.url).port), allowRemote: false, context: { benchFiles: [] } }),
      { code: 'TSCCL_ERR_INVALID_ARGUMENT', details: { argument: '--port' }, message: /is in use/ },
    );
  } finally {
    await first.close();
  }
  const range = await runTsccl(['ui', '--port', '70000']);
  assert.notEqual(range.code, 0);
  assert.match(range.stderr, /--port must be at most 65535/);
  const out = await runTsccl(['ui', '--out', join(tmpdir(), 'no-such-dir-tsccl', 'r.html')]);
  assert.equal(out.code, 1);
  assert.match(out.stderr, /TSCCL_ERR_INVALID_ARGUMENT: --out .*no-such-dir-tsccl/);
});
