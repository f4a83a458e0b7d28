import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSchedule } from '../../src/algorithms/registry.js';
import { type CallShape, inPlaceLayout } from '../../src/algorithms/schedule.js';
import { STEP_SEND, programsOf } from '../../src/sim/schedule-program.js';

const shape: CallShape = { collective: 'allReduce', nranks: 2, count: 1024, root: 0, inPlace: false, chunkCount: 0 };
/** Per send of rank 0's one channel, whether it is fresh. */
const freshSends = (algorithm: string): boolean[] => {
  const [program] = programsOf(generateSchedule(shape, 0, algorithm), 4, true);
  return Array.from(program.kinds).flatMap((kind, i) => (kind === STEP_SEND ? [program.fresh![i] === 1] : []));
};

test('a send is fresh when the channel wrote its data earlier in the call', () => {
  // The ring sends its input half, then the half it reduced.
  assert.deepEqual(freshSends('ring'), [false, true]);
  // Recursive doubling sends its input only.
  assert.deepEqual(freshSends('recursive_doubling'), [false]);
});

test('programs carry no fresh marks unless asked', () => {
  const [program] = programsOf(generateSchedule(shape, 0, 'ring'), 4);
  assert.equal(program.fresh, undefined);
});

test('a write costs an invalidation for the bytes a peer read since the rank last wrote them', () => {
  const charged = (algorithm: string, nranks: number): number[] => {
    const [program] = programsOf(generateSchedule({ ...shape, nranks }, 0, algorithm), 4, true);
    return Array.from(program.peerReadWrites!).filter((_, i) => program.kinds[i] !== STEP_SEND);
  };
  // 2-rank ring: the half it reduces is copied by its peer (2 KiB of 4), the half it receives is not.
  assert.deepEqual(charged('ring', 2), [2048, 0]);
  assert.deepEqual(charged('recursive_doubling', 2), [0]);
  // 4-rank direct all-reduce: the first fold into the rank's quarter pays for it once, though
  // three peers copy it; the copies of the peers' quarters are read by nobody.
  assert.deepEqual(
    charged('direct', 4).filter((bytes) => bytes > 0),
    [1024],
  );
});

test('in place, a copy back into the output pays for what a peer read of the input', () => {
  const inPlace = { ...shape, inPlace: true };
  const charged = (layout?: ReturnType<typeof inPlaceLayout>): number[] => {
    const [program] = programsOf(generateSchedule(inPlace, 0, 'recursive_doubling'), 4, true, false, layout);
    return Array.from(program.peerReadWrites!).filter((_, i) => program.kinds[i] !== STEP_SEND);
  };
  // 2-rank recursive doubling in place: the exchange lands in scratch, and the copy back writes
  // the 4 KiB the peer read; seen as two buffers, the input and output would not meet.
  assert.deepEqual(charged(inPlaceLayout(inPlace, 0)), [0, 4096]);
  assert.deepEqual(charged(), [0, 0]);
});
