import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { type SimRow, type TscclChooser, linkLoads, simulateExchange, simulateRow, withEnds } from './simulate.js';

/** Rank groups of a parallel layout, tensor-parallel innermost (Megatron's order: tp, dp, pp). */
export interface GroupLayout {
  readonly tp: number;
  readonly pp: number;
  readonly dp: number;
}

export type GroupKind = 'tp' | 'dp' | 'pp';

/** The rank lists of every group of one kind; rank = tp_i + tp*(dp_i + dp*pp_i). */
export function layoutGroups(layout: GroupLayout, kind: GroupKind): number[][] {
  const { tp, pp, dp } = layout;
  const groups: number[][] = [];
  const rank = (t: number, d: number, p: number) => t + tp * (d + dp * p);
  if (kind === 'tp')
    for (let p = 0; p < pp; p++)
      for (let d = 0; d < dp; d++) groups.push(Array.from({ length: tp }, (_, t) => rank(t, d, p)));
  if (kind === 'dp')
    for (let p = 0; p < pp; p++)
      for (let t = 0; t < tp; t++) groups.push(Array.from({ length: dp }, (_, d) => rank(t, d, p)));
  // Pipeline traffic flows between neighbouring stages: one pair per stage boundary.
  if (kind === 'pp')
    for (let d = 0; d < dp; d++)
      for (let t = 0; t < tp; t++) for (let p = 0; p + 1 < pp; p++) groups.push([rank(t, d, p), rank(t, d, p + 1)]);
  return groups;
}

export interface DeviceLinkUse {
  readonly device: string;
  readonly group: number;
  /** Physical links (bundle members) leaving the device that carried traffic, by family. */
  readonly used: Record<string, number>;
  readonly total: Record<string, number>;
  /** Busiest outgoing link bundle of the device: utilisation over the call. */
  readonly peakUtilisation: number;
  readonly bytesOut: number;
}

/** One directed link that carried traffic when every group ran; utilisation is over the slowest group's call time. */
export type LinkUse = ReturnType<typeof withEnds>;

export interface LinkUsageReport {
  readonly op: string;
  readonly bytes: number;
  readonly groups: readonly (readonly number[])[];
  readonly rows: readonly SimRow[];
  readonly devices: readonly DeviceLinkUse[];
  /** Busiest first. */
  readonly links: readonly LinkUse[];
}

/**
 * Which links each device's traffic uses when every group runs its collective: each group is
 * simulated on the flow engine (the analytical model sees no links) with the algorithm it finds
 * fastest, and the links that carried bytes are counted per device. Point-to-point groups
 * (pipeline stages) exchange one message between neighbours, as pipeline parallelism does.
 */
export function linkUsage(
  graph: TopologyGraph,
  groups: readonly (readonly number[])[],
  options: { op: 'all_reduce' | 'sendrecv'; bytes: number; nvls: boolean; chooser?: TscclChooser },
): LinkUsageReport {
  const ranks = graph.accelerators;
  for (const group of groups) {
    for (const r of group)
      if (!(r >= 0 && r < ranks.length))
        throw invalidArgument(`rank ${r} of a group is outside the topology's ${ranks.length} accelerators`, {
          argument: '--ranks',
        });
  }
  const carried = new Float64Array(graph.linkCount);
  const rows: SimRow[] = [];
  const rowOfGroup = new Map<number, SimRow>();
  const deviceGroup = new Map<number, number>();
  groups.forEach((group, g) => {
    const devices = group.map((r) => ranks[r]);
    devices.forEach((d) => {
      deviceGroup.set(d, g);
    });
    if (devices.length < 2) return;
    const row =
      options.op === 'sendrecv'
        ? simulateExchange(graph, devices, options.bytes, { mode: 'flow', elementBytes: 4, chooser: options.chooser })
        : simulateRow(graph, devices, {
            op: 'all_reduce',
            bytes: options.bytes,
            mode: 'flow',
            nvls: options.nvls,
            elementBytes: 4,
            root: 0,
            chooser: options.chooser,
          });
    rows.push(row);
    rowOfGroup.set(g, row);
    for (const load of row.links) carried[load.index] += load.bytes;
  });
  const devices: DeviceLinkUse[] = [...deviceGroup.keys()]
    .sort((a, b) => a - b)
    .map((device) => {
      const used: Record<string, number> = {};
      const total: Record<string, number> = {};
      let peak = 0;
      let bytesOut = 0;
      for (const link of graph.linksFrom(device)) {
        total[link.family] = (total[link.family] ?? 0) + link.count;
        if (carried[link.index] > 0) {
          used[link.family] = (used[link.family] ?? 0) + link.count;
          bytesOut += carried[link.index];
          const row = rowOfGroup.get(deviceGroup.get(device)!);
          if (row !== undefined) peak = Math.max(peak, carried[link.index] / (link.capacity * row.timeUs));
        }
      }
      return {
        device: graph.devices[device].id,
        group: deviceGroup.get(device)!,
        used,
        total,
        peakUtilisation: peak,
        bytesOut,
      };
    });
  const slowestUs = Math.max(0, ...rows.map((row) => row.timeUs));
  const links =
    slowestUs > 0 ? linkLoads(graph, carried, slowestUs, graph.capacities).map((load) => withEnds(graph, load)) : [];
  return { op: options.op, bytes: options.bytes, groups, rows, devices, links };
}
