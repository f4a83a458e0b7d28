#!/usr/bin/env node
// How fast small TCP messages between two Node processes get, call after call, with no tsccl:
// each round both processes send `pieces` messages of `bytes`, each after receiving the peer's
// previous one (the order of a 2-rank ring), over loopback with Nagle off. Prints the median
// round per 50 rounds, to show how long the exchange takes to settle.
// Usage: node bench/bounds/tcp-settle.mjs [pieces=8] [bytes=4096] [rounds=600]
import { fork } from 'node:child_process';
import net from 'node:net';

const peer = process.argv[2] === 'peer';
const [pieces, bytes, rounds, port] = (
  peer ? process.argv.slice(3) : [process.argv[2] ?? 8, process.argv[3] ?? 4096, process.argv[4] ?? 600]
).map(Number);
let outbound;
let inbound;
let received = 0;
let onBytes = () => {};

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  outbound = socket;
  ready();
});
server.listen(0, '127.0.0.1', () => {
  if (peer) {
    process.send(server.address().port);
    dial(port);
  } else {
    fork(new URL(import.meta.url).pathname, ['peer', pieces, bytes, rounds, server.address().port]).on('message', dial);
  }
});

function dial(to) {
  const socket = net.connect({ port: to, host: '127.0.0.1' }, () => {
    socket.setNoDelay(true);
    inbound = socket;
    ready();
  });
  socket.on('data', (chunk) => {
    received += chunk.length;
    onBytes();
  });
}

const receivedAtLeast = (n) =>
  new Promise((resolve) => {
    if (received >= n) return resolve();
    onBytes = () => {
      if (received >= n) {
        onBytes = () => {};
        resolve();
      }
    };
  });

async function ready() {
  if (outbound === undefined || inbound === undefined) return;
  const data = Buffer.alloc(bytes, 1);
  const times = [];
  let expected = 0;
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let j = 0; j < pieces; j++) {
      outbound.write(data);
      expected += bytes;
      await receivedAtLeast(expected);
    }
    times.push((performance.now() - start) * 1000);
  }
  if (!peer) {
    for (let b = 0; b < rounds; b += 50) {
      const block = times.slice(b, b + 50).sort((x, y) => x - y);
      console.log(
        `rounds ${b}-${b + block.length - 1}: median ${block[block.length >> 1].toFixed(0)} us per round of ${pieces} x ${bytes} B`,
      );
    }
  }
  setTimeout(() => process.exit(0), 100);
}
