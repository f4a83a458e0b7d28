import { ONE_SHOT } from '../algorithms/one-shot-plan.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { simulateNvls, simulateNvlsTree } from './nvls-flows.js';
import { simulateOneShot } from './one-shot-flows.js';
import { simulateSchedules } from './schedule-flows.js';
import type { SimCall, SimOutcome } from './sim-call.js';

export { rankHosts } from './flow-costs.js';
export { NvlsTreeLayout } from './nvls-tree-layout.js';
export { reducingSwitch } from './reducing-switch.js';
export type { SimCall, SimOutcome } from './sim-call.js';

/**
 * Runs one collective call on a topology at flow level, by its path: in-switch reduction, on one
 * switch or in a tree of servers (nvls-flows.ts), the one-shot path (one-shot-flows.ts), or the schedules every other
 * algorithm runs, walked step by step (schedule-flows.ts).
 */
export function simulateFlows(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  if (call.algorithm === 'nvls') return simulateNvls(graph, rankDevices, call);
  if (call.algorithm === 'nvls_tree') return simulateNvlsTree(graph, rankDevices, call);
  if (call.algorithm === ONE_SHOT) return simulateOneShot(graph, rankDevices, call);
  return simulateSchedules(graph, rankDevices, call);
}
