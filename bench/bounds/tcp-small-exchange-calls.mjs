#!/usr/bin/env node
// What the system calls under a small TCP call cost through Node and through FFI: two processes
// exchange `bytes` (8 by default) `exchanges` times per round over loopback (Nagle off), each
// writing its bytes and reading the peer's, in turn as either can move, in a loop that never sleeps, with tsccl's own socket
// calls (src/transport/tcp/socket-calls.ts): node:fs's readSync/writeSync, and recv/send through
// koffi, in alternate rounds. `sockets` 1 shares one socket both ways, as tsccl's ranks, Open
// MPI's tcp btl and Gloo do, where an acknowledgement rides on the reply; 2 (the default, the
// layout tsccl had before 2026-12-04) has each process write on the socket its peer dialed and
// read the one it dialed, so every message travels alone and is acknowledged on its own. A 2-process all-reduce of 8 B is one such exchange plus
// tsccl's own work. Prints the median us per exchange of each kind, their ratio, and how many
// reads per exchange found nothing. Needs `npx tsc` first (dist/).
// Usage: node bench/bounds/tcp-small-exchange-calls.mjs [rounds=6] [exchanges=100000] [sockets=2] [bytes=8]
import { fork } from 'node:child_process';
import net from 'node:net';
import { NODE_CALLS, loadFfiCalls } from '../../dist/src/transport/tcp/socket-calls.js';
import { median } from '../../dist/src/tune/median.js';

const peer = process.argv[2] === 'peer';
const [rounds = 6, exchanges = 100_000, sockets = 2, bytes = 8, port] = (
  peer ? process.argv.slice(3) : process.argv.slice(2)
).map(Number);
if ((sockets !== 1 && sockets !== 2) || !(bytes >= 1)) {
  console.error('usage: tcp-small-exchange-calls.mjs [rounds] [exchanges] [sockets: 1 or 2] [bytes >= 1]');
  process.exit(2);
}
const ffi = loadFfiCalls();
if (ffi instanceof Error) {
  console.log(`skipped: recv/send through koffi unavailable (${ffi.message})`);
  process.exit(0);
}
const kinds = [ffi, NODE_CALLS];

function run(readFrom, writeTo) {
  for (const socket of [readFrom, writeTo]) {
    socket.setNoDelay(true);
    socket.pause();
  }
  const readFd = readFrom._handle.fd;
  const writeFd = writeTo._handle.fd;
  const out = new Uint8Array(bytes).fill(7);
  const into = new Uint8Array(Math.max(4096, Math.min(bytes, 262_144)));
  const times = kinds.map(() => []);
  const empties = kinds.map(() => []);
  let got = 0;
  let expected = 0;
  for (let round = -1; round < rounds; round++) {
    for (let k = 0; k < kinds.length; k++) {
      const calls = kinds[k];
      const n = round < 0 ? 10_000 : exchanges;
      let empty = 0;
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        let sent = 0;
        expected += bytes;
        // Both sides write at once: a message larger than the kernel's buffers moves only as the peer reads.
        while (sent < bytes || got < expected) {
          if (sent < bytes) sent += calls.write(writeFd, sent === 0 ? out : out.subarray(sent));
          if (got < expected) {
            const read = calls.read(readFd, into);
            if (read === 0) empty++;
            got += read;
          }
        }
      }
      if (round < 0) continue;
      times[k].push(((performance.now() - start) * 1000) / n);
      empties[k].push(empty / n);
    }
  }
  return { times, empties };
}

let accepted;
let dialed;
/** Runs once this process holds the sockets its layout needs; the parent reports. */
function ready() {
  const readFrom = sockets === 1 ? (peer ? dialed : accepted) : dialed;
  const writeTo = sockets === 1 ? readFrom : accepted;
  if (readFrom === undefined || writeTo === undefined) return;
  const { times, empties } = run(readFrom, writeTo);
  if (peer) {
    setTimeout(() => process.exit(0), 200);
    return;
  }
  const us = times.map(median);
  const layout = sockets === 1 ? 'one socket both ways' : 'a socket each way';
  for (const [k, calls] of kinds.entries())
    console.log(
      `${calls.kind === 'ffi' ? 'recv/send through koffi' : 'node:fs readSync/writeSync'}, ${layout}: ${us[k].toFixed(2)} us per ${bytes} B exchange, ${median(empties[k]).toFixed(2)} empty reads per exchange`,
    );
  console.log(
    `koffi / node:fs: ${(us[0] / us[1]).toFixed(2)} (medians of ${rounds} alternating rounds of ${exchanges})`,
  );
  process.exit(0);
}

const server = net.createServer((socket) => {
  accepted = socket;
  ready();
});
server.listen(0, '127.0.0.1', () => {
  const ownPort = server.address().port;
  // `dialed` is set once connected: a socket still connecting takes no writes.
  const dial = (to) => {
    const socket = net.connect(to, '127.0.0.1', () => {
      dialed = socket;
      ready();
    });
  };
  if (peer) {
    dial(port);
    if (sockets === 2) process.send(ownPort);
    return;
  }
  const child = fork(new URL(import.meta.url).pathname, [
    'peer',
    String(rounds),
    String(exchanges),
    String(sockets),
    String(bytes),
    String(ownPort),
  ]);
  child.on('message', (childPort) => dial(childPort));
});
