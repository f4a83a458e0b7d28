import type { Topology } from '../../src/topology/topology-schema.js';

export interface PlacedDevice {
  readonly id: string;
  readonly kind: string;
  readonly host: number | undefined;
  readonly x: number;
  readonly y: number;
}

export interface TopologyLayout {
  readonly devices: readonly PlacedDevice[];
  readonly hosts: readonly number[];
}

const GAP = 64;
const ROW = 90;
const HOSTS_PER_ROW = 8;

/** Rows of a server box, top to bottom, as vendor diagrams draw them: NICs up to the fabric, then CPUs, switches, accelerators. */
const ROW_OF_KIND: Record<string, number> = { nic: 0, cpu: 1, switch: 2, gpu: 3, npu: 3, core: 3 };

/**
 * Positions that read like a vendor diagram: each server a box of rows, servers side by side,
 * fabric switches above in tiers (leaves nearest the servers, spines above them).
 */
export function layoutTopology(topology: Topology): TopologyLayout {
  const byHost = new Map<number, Topology['devices'][number][]>();
  const fabric: string[] = [];
  for (const device of topology.devices) {
    if (device.host === undefined) fabric.push(device.id);
    else (byHost.get(device.host) ?? byHost.set(device.host, []).get(device.host)!).push(device);
  }
  const hosts = [...byHost.keys()].sort((a, b) => a - b);
  const placed: PlacedDevice[] = [];
  // Wide servers (72 GPUs in a rack) wrap their rows.
  const perRow = Math.max(8, Math.ceil(Math.sqrt(Math.max(...[...byHost.values()].map((d) => d.length), 1)) * 1.5));
  let hostWidth = 0;
  let hostHeight = 0;
  const rowsOf = hosts.map((host) => {
    const rows: Topology['devices'][number][][] = [[], [], [], []];
    for (const device of byHost.get(host)!) rows[ROW_OF_KIND[device.kind] ?? 2].push(device);
    const wrapped = rows.filter((r) => r.length > 0).flatMap((r) => chunk(r, perRow));
    hostWidth = Math.max(hostWidth, ...wrapped.map((r) => r.length * GAP));
    hostHeight = Math.max(hostHeight, wrapped.length * ROW + 2.4 * ROW);
    return wrapped;
  });
  const boxWidth = hostWidth + GAP;
  const boxHeight = hostHeight + ROW / 2;
  const meshed = meshedAccelerators(topology);
  hosts.forEach((host, i) => {
    const left = (i % HOSTS_PER_ROW) * boxWidth;
    const top = Math.floor(i / HOSTS_PER_ROW) * boxHeight;
    rowsOf[i].forEach((row, r) => {
      const offset = (hostWidth - row.length * GAP) / 2;
      // Accelerators wired to each other directly (a full mesh) sit on a circle, where every link shows.
      if (row.every((d) => meshed.has(d.id)) && row.length > 2) {
        const radius = Math.min(hostWidth / 2, ROW * 1.2);
        row.forEach((device, k) => {
          const angle = (2 * Math.PI * k) / row.length - Math.PI / 2;
          placed.push({
            id: device.id,
            kind: device.kind,
            host,
            x: left + hostWidth / 2 + radius * Math.cos(angle),
            y: top + r * ROW + radius + radius * Math.sin(angle),
          });
        });
        return;
      }
      row.forEach((device, k) => {
        placed.push({ id: device.id, kind: device.kind, host, x: left + offset + k * GAP, y: top + r * ROW });
      });
    });
  });
  const width = Math.min(hosts.length, HOSTS_PER_ROW) * boxWidth;
  const tiers = fabricTiers(topology, new Set(fabric));
  for (const [tier, ids] of tiers.entries()) {
    const spacing = width / (ids.length + 1);
    ids.forEach((id, k) => {
      placed.push({ id, kind: 'switch', host: undefined, x: spacing * (k + 1) - GAP / 2, y: -(tier + 1) * 1.6 * ROW });
    });
  }
  return { devices: placed, hosts };
}

/** Accelerators with a link straight to another accelerator. */
function meshedAccelerators(topology: Topology): Set<string> {
  const kinds = new Map(topology.devices.map((d) => [d.id, d.kind]));
  const isRank = (id: string) => ['gpu', 'npu', 'core'].includes(kinds.get(id) ?? '');
  const meshed = new Set<string>();
  for (const link of topology.links)
    if (isRank(link.a) && isRank(link.b)) {
      meshed.add(link.a);
      meshed.add(link.b);
    }
  return meshed;
}

/** Fabric switches by distance from the servers: tier 0 (leaves) touches a server's device, tier 1 a leaf, and so on. */
function fabricTiers(topology: Topology, fabric: ReadonlySet<string>): string[][] {
  const neighbours = new Map<string, string[]>();
  for (const link of topology.links) {
    (neighbours.get(link.a) ?? neighbours.set(link.a, []).get(link.a)!).push(link.b);
    (neighbours.get(link.b) ?? neighbours.set(link.b, []).get(link.b)!).push(link.a);
  }
  const tierOf = new Map<string, number>();
  let frontier = [...fabric].filter((id) => (neighbours.get(id) ?? []).some((n) => !fabric.has(n)));
  for (let tier = 0; frontier.length > 0; tier++) {
    for (const id of frontier) tierOf.set(id, tier);
    frontier = [
      ...new Set(frontier.flatMap((id) => (neighbours.get(id) ?? []).filter((n) => fabric.has(n) && !tierOf.has(n)))),
    ];
  }
  const tiers: string[][] = [];
  for (const id of fabric) (tiers[tierOf.get(id) ?? 0] ??= []).push(id);
  return tiers.map((ids) => ids ?? []);
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
