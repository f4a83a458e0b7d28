import type { TopologyGraph } from '../topology/topology-graph.js';

/**
 * What a graph and a rank list determine, derived once: a sweep's rows ask for it to offer,
 * choose, price and count channels, and at 16,384 ranks deriving it again costs a row tens of ms.
 * Keyed by identity (WeakMaps), so a graph or rank list let go takes its entries with it.
 */
export class GraphRanksMemo<T> {
  private readonly byGraph = new WeakMap<TopologyGraph, WeakMap<readonly number[], T>>();

  get(graph: TopologyGraph, rankDevices: readonly number[], derive: () => T): T {
    let byRanks = this.byGraph.get(graph);
    if (byRanks === undefined) {
      byRanks = new WeakMap();
      this.byGraph.set(graph, byRanks);
    }
    if (byRanks.has(rankDevices)) return byRanks.get(rankDevices) as T;
    const value = derive();
    byRanks.set(rankDevices, value);
    return value;
  }
}
