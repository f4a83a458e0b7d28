import { TopologyGraph } from '../topology/topology-graph.js';

const statesOf = new WeakMap<TopologyGraph, readonly TopologyGraph[]>();

/**
 * The states a machine was measured in: the machine as its profile averages it, and, where its
 * protocol carries worstInvalidationTiers, the same machine in that costliest state (a VM whose
 * vCPUs move between physical cores): those tiers, and the copy speed of fresh data measured in
 * the same moment (worstFreshReadGBps). Built once per machine.
 */
export function machineStates(machine: TopologyGraph): readonly TopologyGraph[] {
  let states = statesOf.get(machine);
  if (states === undefined) {
    const protocols = machine.topology.protocols ?? [];
    const worst = protocols.some((p) => p.worstInvalidationTiers !== undefined)
      ? new TopologyGraph({
          ...machine.topology,
          protocols: protocols.map((p) =>
            p.worstInvalidationTiers === undefined
              ? p
              : {
                  ...p,
                  invalidationTiers: p.worstInvalidationTiers,
                  freshReadGBps: p.worstFreshReadGBps ?? p.freshReadGBps,
                },
          ),
        })
      : undefined;
    states = worst === undefined ? [machine] : [machine, worst];
    statesOf.set(machine, states);
  }
  return states;
}

/**
 * The candidate that loses least to the fastest in whichever state the machine is in: for each,
 * its worst regret (its time over the state's fastest) across the states, and the least of
 * those, ties to the earlier candidate. `times[state][candidate]`, in us. With one state, the
 * fastest. A machine that switches states unseen is better served by a choice that is never far
 * behind than by the average state's fastest (docs/tuning.md).
 */
export function leastWorstRegret(times: readonly (readonly number[])[]): number {
  const fastest = times.map((state) => Math.min(...state));
  let best = 0;
  let bestRegret = Infinity;
  for (let candidate = 0; candidate < times[0].length; candidate++) {
    const regret = Math.max(...times.map((state, s) => state[candidate] / fastest[s]));
    if (regret < bestRegret) [best, bestRegret] = [candidate, regret];
  }
  return best;
}
