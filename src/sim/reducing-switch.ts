import { SWITCH_KINDS } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';

/** The switch that can reduce in the fabric, if every rank hangs off the same one. */
export function reducingSwitch(graph: TopologyGraph, rankDevices: readonly number[]): number | undefined {
  let found: number | undefined;
  for (const device of rankDevices) {
    const candidates = graph
      .linksFrom(device)
      .filter(
        (l) => graph.devices[l.to].kind === 'switch' && SWITCH_KINDS[graph.devices[l.to].switchKind!].inSwitchReduction,
      )
      .map((l) => l.to);
    if (candidates.length === 0 || (found !== undefined && !candidates.includes(found))) return undefined;
    found ??= candidates[0];
  }
  return found;
}
