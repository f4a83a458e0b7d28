import type { LocalProfile } from '../topology/local-profile.js';
import type { LocalDetection } from '../topology/local-topology.js';
import { solveIncreasing } from './solve-increasing.js';
import { type TimedCall, simulateTimed } from './timed-call.js';

/**
 * The rate the fit gives when the call ran faster than the model allows at any rate: the
 * simulator then charges the path's copies at the machine's copy speed (oneShotOf caps its
 * efficiency at 1), as any rate above that does.
 */
export const MAX_ONE_SHOT_GBPS = 1000;

/**
 * The one-shot rate (shm.oneShotGBps) with which the simulator reproduces a timed call through
 * the one-shot path of thread ranks. It is fitted on a 2-rank all-reduce, the call the path
 * mostly serves, where both ranks publish and read at once (a 2-rank broadcast read it at its
 * best; docs/tuning.md). The simulated time grows with the time per byte, so bisection finds it.
 * Returns the rate and whether the call ran faster than the model allows at any rate (then
 * MAX_ONE_SHOT_GBPS).
 */
export function fitOneShotRate(
  profile: LocalProfile,
  detection: LocalDetection,
  timed: TimedCall,
): { gbps: number; belowModel: boolean } {
  // x is ns per byte, 1 / GB/s; x = 0 is an unbounded rate.
  const simulate = (x: number) =>
    simulateTimed(
      { ...profile, shm: { ...profile.shm, oneShotGBps: x === 0 ? MAX_ONE_SHOT_GBPS : 1 / x } },
      detection,
      timed,
    );
  const { x, atZero } = solveIncreasing(simulate, timed.timeUs, {
    firstStep: 1 / MAX_ONE_SHOT_GBPS,
    maxX: 1000,
    tolerance: (high) => high * 1e-3,
  });
  return atZero ? { gbps: MAX_ONE_SHOT_GBPS, belowModel: true } : { gbps: 1 / x, belowModel: false };
}
