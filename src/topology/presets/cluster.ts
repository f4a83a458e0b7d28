import { LINK_KINDS, type LinkKindId } from '../catalog.js';
import { invalidArgument } from '../../errors.js';
import type { Topology } from '../topology-schema.js';
import { type ServerContext, type ServerResult, TopologyBuilder } from './topology-builder.js';

export const NIC_FAMILIES = ['ib', 'roce', 'efa', 'ethernet'] as const;
export type NicFamily = (typeof NIC_FAMILIES)[number];
export const FABRICS = ['leaf-spine', 'rail'] as const;
export type Fabric = (typeof FABRICS)[number];

export interface ClusterOptions {
  readonly nodes: number;
  readonly accelerators: number;
  readonly nicsPerNode: number;
  readonly nicFamily: NicFamily;
  readonly nicGbps: number;
  readonly fabric: Fabric;
  /** NIC ports below one leaf switch (half of a 64-port switch, the other half going up). */
  readonly leafDownPorts: number;
}

const FAMILY_KINDS: Record<NicFamily, readonly LinkKindId[]> = {
  ib: ['ib-edr', 'ib-hdr', 'ib-ndr', 'ib-xdr'],
  roce: ['roce-100', 'roce-200', 'roce-400'],
  efa: ['efa-100'],
  ethernet: ['eth-1', 'eth-10', 'eth-25', 'eth-100', 'eth-200', 'eth-400'],
};

/**
 * The catalog kind for a NIC family at a line rate: the exact entry when there is one, else the
 * family's nearest entry with its bandwidth overridden (so any --nic-gbps works).
 */
export function nicLink(family: NicFamily, gbitsPerSecond: number): { kind: LinkKindId; gbps?: number } {
  const candidates = FAMILY_KINDS[family];
  const gbps = gbitsPerSecond / 8;
  const exact = candidates.find((k) => LINK_KINDS[k].gbps === gbps);
  if (exact !== undefined) return { kind: exact };
  const nearest = candidates.reduce((best, k) =>
    Math.abs(LINK_KINDS[k].gbps - gbps) < Math.abs(LINK_KINDS[best].gbps - gbps) ? k : best,
  );
  return { kind: nearest, gbps };
}

/**
 * Builds `nodes` copies of one server and joins their NICs with a two-tier Clos: leaf switches
 * below one spine layer. `leaf-spine` fills leaves with NICs in order (a server's NICs share a
 * leaf); `rail` puts NIC i of every server on rail leaf i, so traffic between same-index GPUs of
 * different servers stays inside one leaf. Spine links are non-blocking: each leaf has as much
 * bandwidth up as it has down. The spine switches are modelled as one device because ECMP
 * spreads flows over them.
 */
export function buildCluster(
  name: string,
  description: string,
  options: ClusterOptions,
  server: (ctx: ServerContext) => ServerResult,
): Topology {
  const builder = new TopologyBuilder();
  const nic = nicLink(options.nicFamily, options.nicGbps);
  const nicsByNode: (readonly string[])[] = [];
  let nicPorts = 1;
  for (let host = 0; host < options.nodes; host++) {
    const prefix = options.nodes > 1 ? `n${host}.` : '';
    const result = server({
      builder,
      host,
      prefix,
      accelerators: options.accelerators,
      nics: options.nicsPerNode,
      nicKind: nic.kind,
    });
    nicsByNode.push(result.nics);
    nicPorts = result.nicPorts ?? 1;
  }
  if (options.nodes > 1) {
    if (nicsByNode.some((nics) => nics.length === 0))
      throw invalidArgument('--nodes > 1 needs --nics-per-node >= 1', { argument: '--nics-per-node' });
    connectFabric(builder, options, nicsByNode, nicPorts, nic);
  }
  return builder.build(name, description);
}

function connectFabric(
  builder: TopologyBuilder,
  options: ClusterOptions,
  nicsByNode: readonly (readonly string[])[],
  nicPorts: number,
  nic: { kind: LinkKindId; gbps?: number },
): void {
  const switchKind = options.nicFamily === 'ib' ? 'ib-switch' : 'eth-switch';
  const leaves = new Map<string, string[]>();
  nicsByNode.forEach((nics, host) => {
    nics.forEach((id, k) => {
      const leafName =
        options.fabric === 'rail'
          ? `rail${k}.leaf${Math.floor((host * nicPorts) / options.leafDownPorts)}`
          : `leaf${Math.floor(((host * nics.length + k) * nicPorts) / options.leafDownPorts)}`;
      if (!leaves.has(leafName)) leaves.set(leafName, []);
      leaves.get(leafName)!.push(id);
    });
  });
  const spine =
    leaves.size > 1
      ? builder.switchDevice('spine', undefined, switchKind, 'spine layer (ECMP over its switches)')
      : undefined;
  const link = (a: string, b: string, count: number) =>
    builder.links.push({ a, b, kind: nic.kind, count, ...(nic.gbps === undefined ? {} : { gbps: nic.gbps }) });
  for (const [leafName, nics] of leaves) {
    const leaf = builder.switchDevice(leafName, undefined, switchKind);
    for (const id of nics) link(id, leaf, nicPorts);
    if (spine !== undefined) link(leaf, spine, nics.length * nicPorts);
  }
}
