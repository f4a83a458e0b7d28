import { SWITCH_KINDS, type SwitchKindId } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';

/**
 * The switch every rank hangs off, among those of a kind `accepts` (the first rank's first such
 * switch, which every other rank must link to as well), if any.
 */
export function sharedSwitch(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  accepts: (switchKind: SwitchKindId) => boolean,
): number | undefined {
  let found: number | undefined;
  for (const device of rankDevices) {
    const candidates = graph
      .linksFrom(device)
      .filter((l) => graph.devices[l.to].kind === 'switch' && accepts(graph.devices[l.to].switchKind!))
      .map((l) => l.to);
    if (candidates.length === 0 || (found !== undefined && !candidates.includes(found))) return undefined;
    found ??= candidates[0];
  }
  return found;
}

/** The switch that can reduce in the fabric, if every rank hangs off the same one. */
export function reducingSwitch(graph: TopologyGraph, rankDevices: readonly number[]): number | undefined {
  return sharedSwitch(graph, rankDevices, (kind) => SWITCH_KINDS[kind].inSwitchReduction);
}
