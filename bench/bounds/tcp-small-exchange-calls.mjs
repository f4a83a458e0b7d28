#!/usr/bin/env node
// What the system calls under a small TCP call cost through Node and through FFI: two processes
// share one loopback socket (Nagle off) and exchange 8 B `exchanges` times per round, each
// writing its 8 B and then reading until the peer's have come, in a loop that never sleeps, with
// tsccl's own socket calls (src/transport/tcp/socket-calls.ts): node:fs's readSync/writeSync,
// and recv/send through koffi, in alternate rounds. A 2-process all-reduce of 8 B is one such
// exchange plus tsccl's own work. Prints the median us per exchange of each, their ratio, and how
// many reads per exchange found nothing. Needs `npx tsc` first (dist/).
// Usage: node bench/bounds/tcp-small-exchange-calls.mjs [rounds=6] [exchanges=100000]
import { fork } from 'node:child_process';
import net from 'node:net';
import { NODE_CALLS, loadFfiCalls } from '../../dist/src/transport/tcp/socket-calls.js';
import { median } from '../../dist/src/tune/median.js';

const peer = process.argv[2] === 'peer';
const [rounds = 6, exchanges = 100_000, port] = (peer ? process.argv.slice(3) : process.argv.slice(2)).map(Number);
const ffi = loadFfiCalls();
if (ffi instanceof Error) {
  console.log(`skipped: recv/send through koffi unavailable (${ffi.message})`);
  process.exit(0);
}
const kinds = [ffi, NODE_CALLS];

function run(socket) {
  socket.setNoDelay(true);
  socket.pause();
  const fd = socket._handle.fd;
  const out = new Uint8Array(8).fill(7);
  const into = new Uint8Array(4096);
  const times = kinds.map(() => []);
  const empties = kinds.map(() => []);
  for (let round = -1; round < rounds; round++) {
    for (let k = 0; k < kinds.length; k++) {
      const calls = kinds[k];
      const n = round < 0 ? 10_000 : exchanges;
      let got = 0;
      let empty = 0;
      const start = performance.now();
      for (let i = 1; i <= n; i++) {
        let sent = 0;
        while (sent < 8) sent += calls.write(fd, sent === 0 ? out : out.subarray(sent));
        while (got < 8 * i) {
          const read = calls.read(fd, into);
          if (read === 0) empty++;
          got += read;
        }
      }
      if (round < 0) continue;
      times[k].push(((performance.now() - start) * 1000) / n);
      empties[k].push(empty / n);
    }
  }
  return { times, empties };
}

if (peer) {
  const socket = net.connect(port, '127.0.0.1', () => {
    run(socket);
    socket.end();
    process.exit(0);
  });
} else {
  const server = net.createServer((socket) => {
    const { times, empties } = run(socket);
    const us = times.map(median);
    for (const [k, calls] of kinds.entries())
      console.log(
        `${calls.kind === 'ffi' ? 'recv/send through koffi' : 'node:fs readSync/writeSync'}: ${us[k].toFixed(2)} us per 8 B exchange, ${median(empties[k]).toFixed(2)} empty reads per exchange`,
      );
    console.log(
      `koffi / node:fs: ${(us[0] / us[1]).toFixed(2)} (medians of ${rounds} alternating rounds of ${exchanges})`,
    );
    server.close();
    socket.destroy();
  });
  server.listen(0, '127.0.0.1', () => {
    fork(new URL(import.meta.url).pathname, ['peer', String(rounds), String(exchanges), String(server.address().port)]);
  });
}
