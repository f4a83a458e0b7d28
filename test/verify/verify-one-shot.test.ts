import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type OneShotPlan, type OneShotRead, oneShotPlan } from '../../src/algorithms/one-shot-plan.js';
import { COLLECTIVES, type CallShape, type Collective } from '../../src/algorithms/schedule.js';
import { verifyOneShot, verifyOneShotPlans } from '../../src/verify/verify-one-shot.js';

const shape = (over: Partial<CallShape>): CallShape => ({
  collective: 'allReduce',
  nranks: 3,
  count: 2,
  root: 0,
  inPlace: false,
  chunkCount: 0,
  ...over,
});
const ROOTED = new Set<Collective>(['broadcast', 'reduce', 'gather', 'scatter']);

test('every one-shot collective is proved for n = 1..33, in and out of place, by value and by reference, every root', () => {
  let proofs = 0;
  for (const collective of COLLECTIVES) {
    for (let n = 1; n <= 33; n++) {
      const counts = collective === 'barrier' ? [0] : [0, 1, 3];
      const roots = ROOTED.has(collective) ? [...new Set([0, n - 1, Math.floor(n / 2)])] : [0];
      for (const count of counts) {
        for (const root of roots) {
          for (const inPlace of [false, true]) {
            const result = verifyOneShot(shape({ collective, nranks: n, count, root, inPlace }));
            assert.ok(
              result.ok,
              `${collective} n=${n} count=${count} root=${root} inPlace=${inPlace}: ${result.errors.join('\n')}`,
            );
            proofs++;
          }
        }
      }
    }
  }
  assert.ok(proofs > 1000);
});

// The verifier must be able to fail: plans broken by hand, one way each.
const plansOf = (s: CallShape) => Array.from({ length: s.nranks }, (_, r) => oneShotPlan(s, r));
const broken = (
  s: CallShape,
  rank: number,
  change: (plan: OneShotPlan) => Partial<OneShotPlan>,
  byReference = false,
  eager = false,
) => {
  const plans = plansOf(s);
  plans[rank] = { ...plans[rank], ...change(plans[rank]) };
  return verifyOneShotPlans(
    Array.from({ length: s.nranks }, () => s),
    plans,
    { byReference, eager },
  );
};
const withReads = (reads: OneShotRead[]) => () => ({ reads });
const fails = (result: { ok: boolean; errors: string[] }, pattern: RegExp) => {
  assert.equal(result.ok, false);
  assert.match(result.errors.join('\n'), pattern);
};

test('a missing contribution is reported', () => {
  fails(
    broken(shape({}), 1, (p) => ({ reads: p.reads.slice(0, 2) })),
    /rank 1: output\[0\] holds r0\[0\]\+r1\[0\], expected r0\[0\]\+r1\[0\]\+r2\[0\]/,
  );
});

test('a contribution folded twice is reported', () => {
  fails(
    broken(shape({}), 0, (p) => ({ reads: [...p.reads, p.reads[2]] })),
    /rank 0: output\[0\] holds r0\[0\]\+r1\[0\]\+r2\[0\]\+r2\[0\]/,
  );
});

test('a reduction out of rank order is reported', () => {
  fails(
    broken(shape({ collective: 'reduceScatter' }), 2, (p) => ({ reads: [p.reads[1], p.reads[0], p.reads[2]] })),
    /rank 2: output\[0\] holds r1\[4\]\+r0\[4\]\+r2\[4\]/,
  );
});

test('a piece read from the wrong block or placed in the wrong place is reported', () => {
  fails(
    broken(shape({ collective: 'scatter', root: 1 }), 2, (p) => ({ reads: [{ ...p.reads[0], offset: 0 }] })),
    /rank 2: output\[0\] holds r1\[0\], expected r1\[4\]/,
  );
  fails(
    broken(shape({ collective: 'gather', root: 2 }), 2, (p) => ({
      reads: [p.reads[1], p.reads[0], p.reads[2]].map((read, i) => ({ ...read, outputOffset: i * 2 })),
    })),
    /rank 2: output\[0\] holds r1\[0\], expected r0\[0\]/,
  );
  fails(
    broken(shape({ collective: 'allToAll' }), 0, (p) => ({ reads: p.reads.map((read) => ({ ...read, offset: 2 })) })),
    /rank 0: output\[0\] holds r0\[2\], expected r0\[0\]/,
  );
});

test('a root not respected is reported: a read of a rank that publishes no data', () => {
  fails(
    broken(shape({ collective: 'broadcast', root: 1 }), 2, withReads([{ peer: 0, offset: 0, outputOffset: 0 }])),
    /rank 2 reads rank 0's message, which carries no data/,
  );
});

test('a rank that does not wait for every other, or reads a slot it did not wait for, is reported', () => {
  fails(
    broken(shape({ collective: 'barrier', count: 0 }), 1, () => ({ awaits: [0, 1] })),
    /rank 1 does not wait for rank 2/,
  );
  fails(
    broken(shape({}), 0, () => ({ awaits: [0, 1] })),
    /rank 0 reads rank 2's slot without waiting for it/,
  );
});

test('waiting eagerly, a rank that does not wait for the root, or an all-reduce that waits for fewer than all, is reported', () => {
  const eagerly = (s: CallShape, rank: number, change: (plan: OneShotPlan) => Partial<OneShotPlan>) =>
    broken(s, rank, change, false, true);
  // A broadcast's plans wait eagerly for the root alone, and that proves.
  const bcast = shape({ collective: 'broadcast', root: 1 });
  assert.deepEqual(plansOf(bcast)[2].eagerAwaits, [1]);
  assert.equal(eagerly(bcast, 2, () => ({})).ok, true);
  fails(
    eagerly(bcast, 2, () => ({ eagerAwaits: [] })),
    /rank 2 does not wait for rank 1 \(eagerly\)/,
  );
  fails(
    eagerly(shape({}), 0, () => ({ eagerAwaits: [0, 1] })),
    /rank 0 does not wait for rank 2 \(eagerly\)/,
  );
  fails(
    eagerly(shape({ collective: 'barrier', count: 0 }), 1, () => ({ eagerAwaits: [1] })),
    /rank 1 does not wait for rank 0 \(eagerly\)/,
  );
});

test("messages of different sizes, reads outside a message or the output, and a fold away from the output's start are reported", () => {
  fails(
    broken(shape({}), 2, () => ({ messageCount: 3 })),
    /rank 2 publishes messages of 3 elements, rank 0 of 2/,
  );
  fails(
    broken(shape({ collective: 'allGather' }), 1, (p) => ({ reads: p.reads.map((read) => ({ ...read, offset: 1 })) })),
    /rank 1 reads \[1, \+2\) of rank 0's message of 2 elements/,
  );
  fails(
    broken(shape({ collective: 'allGather' }), 1, (p) => ({
      reads: p.reads.map((read) => ({ ...read, outputOffset: read.outputOffset + 1 })),
    })),
    /rank 1 writes \[5, \+2\) of an output of 6 elements/,
  );
  fails(
    broken(shape({}), 0, (p) => ({ reads: p.reads.map((read) => ({ ...read, outputOffset: 1 })) })),
    /a reduction folds every piece onto the output's start/,
  );
  fails(
    broken(shape({ collective: 'reduce' }), 1, () => ({ reads: plansOf(shape({ collective: 'reduce' }))[0].reads })),
    /rank 1 writes \[0, \+2\) of an output of 0 elements/,
  );
});

test("publishing by reference what the publisher's own output overwrites is reported, by reference only", () => {
  const inPlace = shape({ inPlace: true });
  assert.equal(broken(inPlace, 1, () => ({ byReferenceOverOutput: true })).ok, true);
  fails(
    broken(inPlace, 1, () => ({ byReferenceOverOutput: true }), true),
    /by reference, read after the publishers wrote their output: rank 0: output\[0\] holds r0\[0\]\+r0\[0\]\+r1\[0\]\+r2\[0\]\+r2\[0\]/,
  );
  // Out of place, the output lies elsewhere: by reference is safe either way.
  assert.equal(broken(shape({}), 1, () => ({ byReferenceOverOutput: true }), true).ok, true);
});
