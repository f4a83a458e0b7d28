import type { LocalProfile } from '../topology/local-profile.js';
import type { LocalDetection } from '../topology/local-topology.js';
import { solveIncreasing } from './solve-increasing.js';
import { type TimedCall, simulateTimed } from './timed-call.js';

/** The largest hand-off the fit considers, us: a ring slower than that is a stalled machine, not a model. */
const MAX_HAND_OFF_US = 100_000;

/**
 * The oversubscribed hand-off (shm.oversubscribedMessageUs) with which the simulator reproduces
 * a timed call of thread ranks that outnumber the cores. The simulator charges it to each
 * receiver that had to wait, as a wake-up queued on the cores the ranks share, so no closed form
 * over the call's steps inverts it (dividing a 4-rank ring's time by its hand-offs gave a value
 * with which the simulator predicted the same ring twice as slow). The simulated time grows with
 * the hand-off, so bisection finds it; `profile` gives every other figure.
 * Returns the fitted value and whether the call ran faster than the model allows with no
 * hand-off at all (then 0).
 */
export function fitOversubscribedHandOff(
  profile: LocalProfile,
  detection: LocalDetection,
  timed: TimedCall,
): { handOffUs: number; belowModel: boolean } {
  const simulate = (handOffUs: number) =>
    simulateTimed({ ...profile, shm: { ...profile.shm, oversubscribedMessageUs: handOffUs } }, detection, timed);
  // Within 0.1 us or 0.1%: far below what repeated runs of the ring agree on.
  const { x, atZero } = solveIncreasing(simulate, timed.timeUs, {
    firstStep: 1,
    maxX: MAX_HAND_OFF_US,
    tolerance: (high) => Math.max(0.1, high * 1e-3),
  });
  return { handOffUs: x, belowModel: atZero };
}
