import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ALGORITHMS } from '../../src/algorithms/registry.js';
import { COLLECTIVES, type CallShape, type Schedule } from '../../src/algorithms/schedule.js';
import { verifyAlgorithm } from '../../src/verify/verify-algorithm.js';
import { verifySchedules } from '../../src/verify/verifier.js';

const shape = (over: Partial<CallShape>): CallShape => ({
  collective: 'allReduce',
  nranks: 2,
  count: 4,
  root: 0,
  inPlace: false,
  chunkCount: 0,
  ...over,
});

test('every algorithm is proved for n = 1..33, odd counts, chunked and not, in and out of place', () => {
  let proofs = 0;
  for (const collective of COLLECTIVES) {
    for (const algorithm of Object.keys(ALGORITHMS[collective])) {
      for (let n = 1; n <= 33; n++) {
        const counts = collective === 'barrier' ? [0] : n > 16 ? [0, 1, 7] : [0, 1, 3, 7, 37];
        for (const count of counts) {
          for (const chunkCount of [0, 2]) {
            for (const inPlace of [false, true]) {
              const root =
                collective === 'broadcast' ||
                collective === 'reduce' ||
                collective === 'gather' ||
                collective === 'scatter'
                  ? (count * 7 + n) % n
                  : 0;
              const result = verifyAlgorithm(
                shape({ collective, nranks: n, count, chunkCount, inPlace, root }),
                algorithm,
              );
              assert.ok(
                result.ok,
                `${collective}/${algorithm} n=${n} count=${count} chunk=${chunkCount} inPlace=${inPlace} root=${root}: ${result.errors.join('\n')}`,
              );
              proofs++;
            }
          }
        }
      }
    }
  }
  assert.ok(proofs > 1000);
});

test('variable all-to-all is proved with uneven, empty and offset blocks', () => {
  for (const [n, algorithm] of [1, 2, 3, 5, 8].flatMap(
    (n) =>
      [
        [n, 'pairwise'],
        [n, 'direct'],
      ] as const,
  )) {
    const counts = (from: number, to: number) => (from * 3 + to * 5) % 4;
    const result = verifyAlgorithm(shape({ collective: 'allToAll', nranks: n }), algorithm, (r) => {
      const sendCounts = Array.from({ length: n }, (_, to) => counts(r, to));
      const recvCounts = Array.from({ length: n }, (_, from) => counts(from, r));
      const displs = (c: number[]) => c.map((_, i) => c.slice(0, i).reduce((a, b) => a + b, 0) + i);
      return { sendCounts, recvCounts, sendDispls: displs(sendCounts), recvDispls: displs(recvCounts) };
    });
    assert.ok(result.ok, `${algorithm} n=${n}: ${result.errors.join('\n')}`);
  }
});

// The verifier must be able to fail: hand-written broken schedules.
const two = (
  steps0: Schedule['channels'][number],
  steps1: Schedule['channels'][number],
  scratchCount = 0,
): Schedule[] => [
  { collective: 'allReduce', algorithm: 'test', nranks: 2, rank: 0, channels: [steps0], scratchCount },
  { collective: 'allReduce', algorithm: 'test', nranks: 2, rank: 1, channels: [steps1], scratchCount },
];
const s = (buf: 'input' | 'output' | 'scratch', offset: number, count: number) => ({ buf, offset, count });

test('a missing contribution is reported', () => {
  const shapes = [shape({}), shape({})];
  const r = verifySchedules(
    shapes,
    two(
      [
        { kind: 'send', peer: 1, src: s('input', 0, 4) },
        { kind: 'recv', peer: 1, dst: s('output', 0, 4) },
      ],
      [
        { kind: 'recv', peer: 0, dst: s('output', 0, 4) },
        { kind: 'send', peer: 0, src: s('output', 0, 4) },
      ],
    ),
  );
  assert.equal(r.ok, false);
  assert.match(r.errors.join(), /expected r0\[0\]\+r1\[0\]/);
});

test('a cycle of receives is a deadlock', () => {
  const r = verifySchedules(
    [shape({}), shape({})],
    two(
      [
        { kind: 'recv', peer: 1, dst: s('output', 0, 4) },
        { kind: 'send', peer: 1, src: s('input', 0, 4) },
      ],
      [
        { kind: 'recv', peer: 0, dst: s('output', 0, 4) },
        { kind: 'send', peer: 0, src: s('input', 0, 4) },
      ],
    ),
  );
  assert.equal(r.ok, false);
  assert.match(r.errors.join(), /deadlock/);
});

test('overwriting a buffer a peer still reads waits, and a mutual wait is a deadlock', () => {
  // Each rank reduces into the very buffer it posted: neither may write before the other reads.
  const r = verifySchedules(
    [shape({}), shape({})],
    two(
      [
        { kind: 'copy', src: s('input', 0, 4), dst: s('output', 0, 4) },
        { kind: 'send', peer: 1, src: s('output', 0, 4) },
        { kind: 'recvReduce', peer: 1, dst: s('output', 0, 4), src: s('output', 0, 4) },
      ],
      [
        { kind: 'copy', src: s('input', 0, 4), dst: s('output', 0, 4) },
        { kind: 'send', peer: 0, src: s('output', 0, 4) },
        { kind: 'recvReduce', peer: 0, dst: s('output', 0, 4), src: s('output', 0, 4) },
      ],
    ),
  );
  assert.equal(r.ok, false);
  assert.match(r.errors.join(), /deadlock/);
});

test('count mismatches, bad peers, out-of-bounds slices and clobbered inputs are reported', () => {
  const mismatch = verifySchedules(
    [shape({}), shape({})],
    two([{ kind: 'send', peer: 1, src: s('input', 0, 4) }], [{ kind: 'recv', peer: 0, dst: s('output', 0, 3) }]),
  );
  assert.match(mismatch.errors.join(), /matched a send of 4/);
  const badPeer = verifySchedules([shape({}), shape({})], two([{ kind: 'send', peer: 5, src: s('input', 0, 4) }], []));
  assert.match(badPeer.errors.join(), /peer 5/);
  const oob = verifySchedules(
    [shape({}), shape({})],
    two([{ kind: 'copy', src: s('input', 2, 4), dst: s('output', 0, 4) }], []),
  );
  assert.match(oob.errors.join(), /outside input/);
  const clobber = verifySchedules(
    [shape({}), shape({})],
    two(
      [
        { kind: 'send', peer: 1, src: s('input', 0, 4) },
        { kind: 'recvReduce', peer: 1, dst: s('input', 0, 4), src: s('input', 0, 4) },
        { kind: 'copy', src: s('input', 0, 4), dst: s('output', 0, 4) },
      ],
      [
        { kind: 'send', peer: 0, src: s('input', 0, 4) },
        { kind: 'recvReduce', peer: 0, dst: s('output', 0, 4), src: s('input', 0, 4) },
      ],
    ),
  );
  assert.match(clobber.errors.join(), /overwritten in an out-of-place call/);
});

test('a barrier that lets a rank out early is reported', () => {
  const r = verifySchedules(
    [shape({ collective: 'barrier', count: 0 }), shape({ collective: 'barrier', count: 0 })],
    two([{ kind: 'send', peer: 1, src: s('input', 0, 0) }], [{ kind: 'recv', peer: 0, dst: s('input', 0, 0) }]),
  );
  assert.match(r.errors.join(), /rank 0: left the barrier without hearing from ranks 1/);
});

test('hierarchical algorithms and the tree are proved on every host layout: blocks, interleaved, uneven, one host, one rank per host', () => {
  const layouts = (n: number): number[][] => {
    const dense = (hosts: number[]) => {
      const ids = [...new Set(hosts)];
      return hosts.map((h) => ids.indexOf(h));
    };
    const out = [Array(n).fill(0), Array.from({ length: n }, (_, r) => r)];
    for (const k of [2, 3, 4])
      out.push(
        Array.from({ length: n }, (_, r) => Math.floor(r / k)),
        dense(Array.from({ length: n }, (_, r) => r % k)),
      );
    out.push(dense(Array.from({ length: n }, (_, r) => (r * r + 1) % 3)));
    return out;
  };
  let proofs = 0;
  for (const collective of ['allReduce', 'allGather', 'reduceScatter', 'broadcast'] as const) {
    for (let n = 1; n <= 12; n++) {
      for (const hosts of layouts(n)) {
        for (const count of [0, 1, 7, 37]) {
          for (const inPlace of [false, true]) {
            for (const chunkCount of [0, 3]) {
              const root = collective === 'broadcast' ? (count + n) % n : 0;
              const result = verifyAlgorithm(
                shape({ collective, nranks: n, count, inPlace, chunkCount, root, hosts }),
                'hierarchical',
              );
              if (collective === 'allReduce') {
                const tree = verifyAlgorithm(
                  shape({ collective, nranks: n, count, inPlace, chunkCount, hosts }),
                  'tree',
                );
                assert.ok(
                  tree.ok,
                  `tree n=${n} hosts=${hosts.join(',')} count=${count} inPlace=${inPlace} chunk=${chunkCount}: ${tree.errors.join('\n')}`,
                );
              }
              assert.ok(
                result.ok,
                `${collective} n=${n} hosts=${hosts.join(',')} count=${count} inPlace=${inPlace} chunk=${chunkCount}: ${result.errors.join('\n')}`,
              );
              proofs++;
            }
          }
        }
      }
    }
  }
  assert.ok(proofs > 2000);
});
