#!/usr/bin/env node
// The floor under a 2-process 8 B all-reduce over TCP: two Node processes, no tsccl, exchange
// `bytes` over loopback (Nagle off), each sending its next message as soon as the peer's last
// one is in, `calls` times after `warmup`. With --poll both keep the event loop turning
// (setImmediate), as tsccl's small receives do, instead of sleeping in epoll between messages.
// Prints the mean time per exchange: an all-reduce between 2 ranks is one such exchange.
// Usage: node bench/bounds/tcp-latency.mjs [--poll] [bytes=8] [calls=100000] [warmup=10000]
import { fork } from 'node:child_process';
import net from 'node:net';

const args = process.argv.slice(2);
const peer = args[0] === 'peer';
const poll = args.includes('--poll');
const [bytes = 8, calls = 100000, warmup = 10000, port] = args
  .filter((a) => a !== '--poll' && a !== 'peer')
  .map(Number);
const message = Buffer.alloc(bytes, 1);
const total = warmup + calls;
let inbound;
let outbound;
let pending = 0; // bytes in before this process was ready
let onBytes = (n) => {
  pending += n;
};

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  outbound = socket;
  ready();
});
server.listen(0, '127.0.0.1', () => {
  const mine = server.address().port;
  const settings = [bytes, calls, warmup].map(String);
  if (peer) {
    process.on('disconnect', () => process.exit(0));
    process.send(mine);
    dial(port);
  } else {
    fork(new URL(import.meta.url).pathname, ['peer', ...(poll ? ['--poll'] : []), ...settings, String(mine)]).on(
      'message',
      dial,
    );
  }
});

function dial(to) {
  const socket = net.connect(
    {
      port: to,
      host: '127.0.0.1',
      onread: {
        buffer: Buffer.allocUnsafeSlow(65536),
        callback: (n) => {
          onBytes(n);
          return true;
        },
      },
    },
    () => {
      inbound = socket;
      ready();
    },
  );
  socket.setNoDelay(true);
}

function ready() {
  if (outbound === undefined || inbound === undefined) return;
  let spinning = poll;
  const spin = () => {
    if (spinning) setImmediate(spin);
  };
  spin();
  let got = pending;
  let done = 0;
  let start = 0;
  onBytes = (n) => {
    got += n;
    // Each whole message of the peer's is one exchange done, and this side's next send.
    while (got >= message.byteLength) {
      got -= message.byteLength;
      if (++done === warmup) start = performance.now();
      if (done < total) {
        outbound.write(message);
        continue;
      }
      spinning = false;
      if (!peer)
        console.log(
          `${message.byteLength} B each way over loopback, ${poll ? 'polling' : 'sleeping in epoll'}: ${(((performance.now() - start) * 1000) / calls).toFixed(2)} us per exchange (mean of ${calls})`,
        );
      setTimeout(() => process.exit(0), 100);
      return;
    }
  };
  outbound.write(message);
}
