#!/usr/bin/env node
// How fast can Node itself run a 2-process float32 all-reduce over TCP loopback, with no event
// loop in the way? Two processes share one socket and drive it as Open MPI's tcp btl does: with
// non-blocking reads and writes in a loop that never sleeps (fs.readSync / fs.writeSync on the
// socket's descriptor). Each sends the half its peer owns, reads the peer's contribution to its
// own half, reduces it with tsccl's SIMD kernel (WebAssembly) into the output and sends that back
// while it reads the peer's reduced half straight into the output. `segKiB` below the half's
// size reduces and returns the half in segments as they arrive; the default waits for the whole
// half, which is Open MPI's order for 2 ranks. Out of place. Prints the mean per call.
// Needs `npx tsc` first (dist/).
// Usage: node bench/bounds/tcp-sync-all-reduce.mjs [MiB=8] [calls=50] [segKiB=MiB*512]
import { fork } from 'node:child_process';
import { readSync, writeSync } from 'node:fs';
import net from 'node:net';
import { REDUCE_SIMD_WASM } from '../../dist/src/kernels/reduce-simd-wasm.js';

const peer = process.argv[2] === 'peer';
const args = (peer ? process.argv.slice(3) : process.argv.slice(2)).map(Number);
const [mib = 8, calls = 50, segKiB = mib * 512] = args;
const bytes = mib << 20;
const half = bytes / 2;
const segment = Math.min(segKiB << 10, half);
if (!(mib >= 2 && mib % 2 === 0 && calls >= 1 && segment >= 4096 && segment % 4 === 0)) {
  console.error('usage: tcp-sync-all-reduce.mjs [MiB: even, >= 2] [calls >= 1] [segKiB >= 4]');
  process.exit(2);
}
// A socket with nothing to give throws EAGAIN; a stack trace would be most of that cost.
Error.stackTraceLimit = 0;

function run(socket, rank) {
  socket.pause();
  const fd = socket._handle.fd;
  const memory = new WebAssembly.Memory({
    initial: Math.ceil((2 * bytes + half) / 65536),
    maximum: 65536,
    shared: true,
  });
  const kernels = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(REDUCE_SIMD_WASM, 'base64')), {
    env: { memory },
  }).exports;
  const [inputAt, outputAt, scratchAt] = [0, bytes, 2 * bytes];
  new Float32Array(memory.buffer, inputAt, bytes / 4).fill(rank + 1);
  const input = new Uint8Array(memory.buffer, inputAt, bytes);
  const output = new Uint8Array(memory.buffer, outputAt, bytes);
  const scratch = new Uint8Array(memory.buffer, scratchAt, half);
  const mine = rank * half;
  const theirs = half - mine;
  const call = () => {
    // Out: the peer's half of the input, then this rank's reduced half. In: the same from the peer.
    let sent = 0;
    let received = 0;
    let reduced = 0;
    while (sent < bytes || received < bytes) {
      const sendable = half + reduced;
      if (sent < sendable) {
        const from =
          sent < half
            ? input.subarray(theirs + sent, theirs + half)
            : output.subarray(mine + sent - half, mine + reduced);
        try {
          sent += writeSync(fd, from);
        } catch (error) {
          if (error.code !== 'EAGAIN') throw error;
        }
      }
      if (received < bytes) {
        const into =
          received < half ? scratch.subarray(received) : output.subarray(theirs + received - half, theirs + half);
        try {
          const n = readSync(fd, into, 0, into.byteLength, null);
          if (n === 0) throw new Error('peer closed the socket');
          received += n;
        } catch (error) {
          if (error.code !== 'EAGAIN') throw error;
        }
      }
      const arrived = Math.min(received, half);
      while (reduced < arrived && (arrived - reduced >= segment || arrived === half)) {
        const end = Math.min(reduced + segment, half);
        kernels.f32_sum(outputAt + mine + reduced, inputAt + mine + reduced, scratchAt + reduced, (end - reduced) / 4);
        reduced = end;
      }
    }
  };
  for (let i = 0; i < 5; i++) call();
  const start = performance.now();
  for (let i = 0; i < calls; i++) call();
  const us = ((performance.now() - start) * 1000) / calls;
  const wrong = new Float32Array(output.buffer, outputAt, bytes / 4).filter((v) => v !== 3).length;
  if (!peer)
    console.log(
      `${mib} MiB all-reduce, synchronous loop, ${segment === half ? 'whole halves' : `${segment >> 10} KiB segments`}: ${us.toFixed(0)} us per call, ${wrong} wrong`,
    );
  setTimeout(() => process.exit(wrong === 0 ? 0 : 1), 50);
}

if (peer) {
  const socket = net.connect({ port: args[3], host: '127.0.0.1' }, () => {
    socket.setNoDelay(true);
    run(socket, 1);
  });
} else {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    server.close();
    run(socket, 0);
  });
  server.listen(0, '127.0.0.1', () => {
    fork(new URL(import.meta.url).pathname, ['peer', mib, calls, segKiB, server.address().port].map(String));
  });
}
