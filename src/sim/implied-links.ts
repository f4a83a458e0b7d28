import type { TopologyGraph } from '../topology/topology-graph.js';

/**
 * Links whose capacity can never bind a flow, so that the max-min refill may leave them out.
 * A switch neither starts nor ends a flow, and a route never turns back at one, so every flow
 * into a switch through link l leaves it by one of the switch's other out-links, and every flow
 * out of it through l came in by one of its other in-links. Where l's capacity is at least the
 * sum of those links' (a leaf's uplink to a non-blocking spine, the spine's link down to the
 * leaf), their own constraints already keep l within its capacity: dropping l's constraint
 * changes no feasible rate, so the max-min allocation is the same. A link is dropped only where
 * the links that imply it are all kept, as two links could otherwise each stand for the other
 * (the two links of a switch with two ports). Forwarding and staging links (a device's own) are
 * never dropped. Returns a mask over the links, 1 where the link never binds, or undefined
 * where none is left out.
 */
export function impliedLinks(graph: TopologyGraph, capacities: Float64Array): Uint8Array | undefined {
  const links = graph.linkCount;
  const devices = graph.devices.length;
  const into = new Float64Array(devices);
  const outOf = new Float64Array(devices);
  const pairs = new Map<number, number>();
  for (let l = 0; l < links; l++) {
    const from = graph.linkSource(l);
    const to = graph.linkTarget(l);
    if (from === to) continue;
    outOf[from] += capacities[l];
    into[to] += capacities[l];
    pairs.set(from * devices + to, (pairs.get(from * devices + to) ?? 0) + capacities[l]);
  }
  // Which of its switches' other links could imply each link: its target's out-links, its source's in-links.
  const criteria = new Uint8Array(links);
  for (let l = 0; l < links; l++) {
    const from = graph.linkSource(l);
    const to = graph.linkTarget(l);
    if (from === to) continue;
    const back = pairs.get(to * devices + from) ?? 0;
    if (graph.devices[to].kind === 'switch' && capacities[l] >= (outOf[to] - back) * (1 - 1e-12))
      criteria[l] |= BY_TARGET;
    if (graph.devices[from].kind === 'switch' && capacities[l] >= (into[from] - back) * (1 - 1e-12))
      criteria[l] |= BY_SOURCE;
  }
  if (criteria.every((c) => c === 0)) return undefined;
  const outLinks: number[][] = Array.from({ length: devices }, () => []);
  const inLinks: number[][] = Array.from({ length: devices }, () => []);
  for (let l = 0; l < links; l++) {
    if (graph.linkSource(l) === graph.linkTarget(l)) continue;
    outLinks[graph.linkSource(l)].push(l);
    inLinks[graph.linkTarget(l)].push(l);
  }
  // Implying links other than the link's own reverse, none of them a candidate itself.
  const keptBy = (others: readonly number[], reverse: (o: number) => boolean) =>
    others.every((o) => reverse(o) || criteria[o] === 0);
  const implied = new Uint8Array(links);
  for (let l = 0; l < links; l++) {
    const from = graph.linkSource(l);
    const to = graph.linkTarget(l);
    if (
      ((criteria[l] & BY_TARGET) !== 0 && keptBy(outLinks[to], (o) => graph.linkTarget(o) === from)) ||
      ((criteria[l] & BY_SOURCE) !== 0 && keptBy(inLinks[from], (o) => graph.linkSource(o) === to))
    )
      implied[l] = 1;
  }
  return implied.includes(1) ? implied : undefined;
}

const BY_TARGET = 1;
const BY_SOURCE = 2;
