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
 * never dropped. Returns a mask over the links: 1 where the link never binds.
 */
export function impliedLinks(graph: TopologyGraph, capacities: Float64Array): Uint8Array {
  const links = graph.linkCount;
  const isSwitch = (device: number) => graph.devices[device].kind === 'switch';
  const into = new Float64Array(graph.devices.length);
  const outOf = new Float64Array(graph.devices.length);
  const pairs = new Map<number, number>();
  const pairKey = (from: number, to: number) => from * graph.devices.length + to;
  for (let l = 0; l < links; l++) {
    const [from, to] = [graph.linkSource(l), graph.linkTarget(l)];
    if (from === to) continue;
    outOf[from] += capacities[l];
    into[to] += capacities[l];
    pairs.set(pairKey(from, to), (pairs.get(pairKey(from, to)) ?? 0) + capacities[l]);
  }
  const between = (from: number, to: number) => pairs.get(pairKey(from, to)) ?? 0;
  // Whether l is implied by the out-links of its target switch (into) or the in-links of its source switch (outOf).
  const byTarget = (l: number) => {
    const [from, to] = [graph.linkSource(l), graph.linkTarget(l)];
    return from !== to && isSwitch(to) && capacities[l] >= (outOf[to] - between(to, from)) * (1 - 1e-12);
  };
  const bySource = (l: number) => {
    const [from, to] = [graph.linkSource(l), graph.linkTarget(l)];
    return from !== to && isSwitch(from) && capacities[l] >= (into[from] - between(to, from)) * (1 - 1e-12);
  };
  const candidate = new Uint8Array(links);
  for (let l = 0; l < links; l++) if (byTarget(l) || bySource(l)) candidate[l] = 1;
  if (!candidate.includes(1)) return candidate;
  // Each candidate's implying links: a switch's other out-links (byTarget) or other in-links (bySource).
  const outLinks: number[][] = Array.from({ length: graph.devices.length }, () => []);
  const inLinks: number[][] = Array.from({ length: graph.devices.length }, () => []);
  for (let l = 0; l < links; l++) {
    const [from, to] = [graph.linkSource(l), graph.linkTarget(l)];
    if (from === to) continue;
    outLinks[from].push(l);
    inLinks[to].push(l);
  }
  const implied = new Uint8Array(links);
  for (let l = 0; l < links; l++) {
    if (candidate[l] === 0) continue;
    const [from, to] = [graph.linkSource(l), graph.linkTarget(l)];
    const keptBy = (others: readonly number[], back: (o: number) => boolean) =>
      others.every((o) => back(o) || candidate[o] === 0);
    if (
      (byTarget(l) && keptBy(outLinks[to], (o) => graph.linkTarget(o) === from)) ||
      (bySource(l) && keptBy(inLinks[from], (o) => graph.linkSource(o) === to))
    )
      implied[l] = 1;
  }
  return implied;
}
