#!/usr/bin/env node
// The floor under process ranks over TCP: two Node processes exchange `MB` megabytes over
// loopback in both directions at once, `rounds` times, doing nothing with the bytes. An
// all-reduce of that size moves the same bytes, plus checksums and the reduction.
// Each process dials the other and reads from the socket it dialed, as tsccl does; with
// `readKB` > 0 reads go through `onread` into one reused buffer of that size (tsccl: 256),
// with 0 through 'data' events (a new Buffer per read of at most 64 KiB).
// Usage: node bench/bounds/tcp-exchange.mjs [MB=8] [rounds=10] [readKB=256]
import { fork } from 'node:child_process';
import net from 'node:net';

const peer = process.argv[2] === 'peer';
const [mb, rounds, readKB, port] = peer
  ? process.argv.slice(3)
  : [process.argv[2] ?? '8', process.argv[3] ?? '10', process.argv[4] ?? '256'];
const bytes = Number(mb) << 20;
let onBytes = () => {};
let outbound;
let inbound;

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  outbound = socket;
  ready();
});
server.listen(0, '127.0.0.1', () => {
  if (peer) {
    process.send(server.address().port);
    dial(Number(port));
  } else {
    const child = fork(new URL(import.meta.url).pathname, ['peer', mb, rounds, readKB, String(server.address().port)]);
    child.on('message', (childPort) => dial(childPort));
  }
});

function dial(to) {
  const reads =
    Number(readKB) > 0
      ? {
          onread: {
            buffer: Buffer.allocUnsafeSlow(Number(readKB) << 10),
            callback: (n) => {
              onBytes(n);
              return true;
            },
          },
        }
      : {};
  const socket = net.connect({ port: to, host: '127.0.0.1', ...reads }, () => {
    inbound = socket;
    ready();
  });
  if (Number(readKB) === 0) socket.on('data', (chunk) => onBytes(chunk.length));
}

function ready() {
  if (outbound === undefined || inbound === undefined) return;
  const data = Buffer.alloc(bytes, 1);
  let round = 0;
  let got = 0;
  const start = performance.now();
  onBytes = (n) => {
    got += n;
    if (got < bytes) return;
    got -= bytes;
    if (++round < Number(rounds)) {
      outbound.write(data);
      return;
    }
    const ms = (performance.now() - start) / Number(rounds);
    if (!peer)
      console.log(
        `${mb} MB each way over loopback, ${Number(readKB) > 0 ? `onread into ${readKB} KiB` : "'data' events"}: ${ms.toFixed(2)} ms per exchange`,
      );
    setTimeout(() => process.exit(0), 100);
  };
  outbound.write(data);
}
