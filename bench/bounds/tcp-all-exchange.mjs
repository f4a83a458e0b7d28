#!/usr/bin/env node
// The floor under a direct all-gather of process ranks over TCP, with no tsccl: `n` Node
// processes on loopback (Nagle off, every socket read through `onread` into one reused buffer,
// as tsccl reads), and every round each process writes `bytes` to every other and waits until
// it has `bytes` from every other before the next round. That is the traffic of tsccl's direct
// all-gather of n x bytes. The processes sleep in epoll between reads (no polling): with more
// processes than cores a polling process keeps the core from the one it waits for.
// Prints the mean time per round after `warmup` rounds.
// Usage: node bench/bounds/tcp-all-exchange.mjs [n=4] [bytes=65536] [rounds=4000] [warmup=500]
// Compare, same minutes: node bin/tsccl.js bench --procs -g n -o all_gather --algo direct -b <n x bytes> -e <n x bytes>
import { fork } from 'node:child_process';
import net from 'node:net';

const args = process.argv.slice(2);
if (args[0] === 'rank') runRank(args.slice(1).map(Number));
else launch(args.map(Number));

function launch([n = 4, bytes = 65536, rounds = 4000, warmup = 500]) {
  if (!(n >= 2 && bytes > 0 && rounds > warmup))
    throw new Error('usage: tcp-all-exchange.mjs [n>=2] [bytes>0] [rounds>warmup] [warmup]');
  const ranks = Array.from({ length: n }, (_, r) =>
    fork(new URL(import.meta.url).pathname, ['rank', r, n, bytes, rounds, warmup].map(String)),
  );
  const ports = new Array(n);
  let listening = 0;
  ranks.forEach((child, r) => {
    child.on('message', (m) => {
      if (m.port !== undefined) {
        ports[r] = m.port;
        if (++listening === n) for (const c of ranks) c.send({ ports });
      } else {
        console.log(
          `${n} processes, ${bytes} B to every peer each round: ${m.usPerRound.toFixed(1)} us per round (mean of ${rounds - warmup} after ${warmup})`,
        );
        for (const c of ranks) c.kill();
      }
    });
  });
}

function runRank([rank, n, bytes, rounds, warmup]) {
  const peers = Array.from({ length: n }, (_, p) => p).filter((p) => p !== rank);
  const outbound = new Map(); // peer -> the socket it dialed: this rank writes there
  const received = new Map(peers.map((p) => [p, 0]));
  const message = Buffer.alloc(bytes, rank);
  let dialed = 0;
  let started = false;
  let round = 0;
  let start = 0;
  // A dialing peer says who it is in its first byte.
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.once('data', (hello) => {
      outbound.set(hello[0], socket);
      maybeStart();
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('message', ({ ports }) => {
    for (const p of peers) {
      const socket = net.connect(
        {
          port: ports[p],
          host: '127.0.0.1',
          onread: {
            buffer: Buffer.allocUnsafeSlow(256 * 1024),
            callback: (k) => {
              received.set(p, received.get(p) + k);
              progress();
              return true;
            },
          },
        },
        () => {
          socket.write(Buffer.from([rank]));
          dialed++;
          maybeStart();
        },
      );
      socket.setNoDelay(true);
    }
  });
  function maybeStart() {
    if (started || dialed < peers.length || outbound.size < peers.length) return;
    started = true;
    send();
    progress();
  }
  function send() {
    for (const p of peers) outbound.get(p).write(message);
  }
  // A peer may be a round ahead, so one read can complete more than one round.
  function progress() {
    if (!started) return;
    while (round < rounds && peers.every((p) => received.get(p) >= bytes)) {
      for (const p of peers) received.set(p, received.get(p) - bytes);
      if (++round === warmup) start = performance.now();
      if (round === rounds) {
        if (rank === 0) process.send({ usPerRound: ((performance.now() - start) * 1000) / (rounds - warmup) });
      } else {
        send();
      }
    }
  }
}
