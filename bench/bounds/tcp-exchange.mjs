#!/usr/bin/env node
// The floor under process ranks over TCP: two Node processes exchange `MB` megabytes over one
// loopback socket in both directions at once, `rounds` times, doing nothing with the bytes. An
// all-reduce of that size moves the same bytes, plus checksums and the reduction.
// Usage: node bench/bounds/tcp-exchange.mjs [MB=8] [rounds=10]
import { fork } from 'node:child_process';
import net from 'node:net';

const [role, mb, rounds, port] = process.argv[2] === 'peer' ? process.argv.slice(3) : ['main', process.argv[2] ?? '8', process.argv[3] ?? '10'];
if (role === 'main') {
  const server = net.createServer((socket) => exchange(socket, (ms) => { console.log(`${mb} MB each way over loopback: ${ms.toFixed(2)} ms per exchange`); server.close(); }));
  server.listen(0, '127.0.0.1', () => fork(new URL(import.meta.url).pathname, ['peer', 'dial', mb, rounds, String(server.address().port)]));
} else {
  const socket = net.connect(Number(port), '127.0.0.1', () => exchange(socket, () => socket.end()));
}

function exchange(socket, done) {
  socket.setNoDelay(true);
  const data = Buffer.alloc(Number(mb) << 20, 1);
  let round = 0;
  let got = 0;
  const start = performance.now();
  socket.on('data', (chunk) => {
    got += chunk.length;
    if (got < data.length) return;
    got -= data.length;
    if (++round === Number(rounds)) done((performance.now() - start) / Number(rounds));
    else socket.write(data);
  });
  socket.write(data);
}
