import { ErrorCode, TscclError } from '../../errors.js';
import type { LinkKindId, SwitchKindId } from '../catalog.js';
import type { Device, DeviceKind, Link, Topology } from '../topology-schema.js';

/** Accumulates devices and links; presets and the cluster builder share it. */
export class TopologyBuilder {
  readonly devices: Device[] = [];
  readonly links: Link[] = [];

  device(
    id: string,
    kind: DeviceKind,
    host: number | undefined,
    extra: Partial<
      Pick<
        Device,
        | 'switchKind'
        | 'nic'
        | 'memoryGBps'
        | 'bf16Tflops'
        | 'reduceGBps'
        | 'forwardGBps'
        | 'cacheTiers'
        | 'loopbackTiers'
        | 'label'
      >
    > = {},
  ): string {
    // Assigned field by field, not spread: a 100,000-GPU cluster builds ~300,000 devices.
    const device: Device = host === undefined ? { id, kind } : { id, kind, host };
    for (const key in extra) (device as Record<string, unknown>)[key] = extra[key as keyof typeof extra];
    this.devices.push(device);
    return id;
  }

  switchDevice(id: string, host: number | undefined, switchKind: SwitchKindId, label?: string): string {
    return this.device(id, 'switch', host, label === undefined ? { switchKind } : { switchKind, label });
  }

  link(a: string, b: string, kind: LinkKindId, count = 1): void {
    this.links.push({ a, b, kind, count });
  }

  /**
   * Searches from the newest device: a server binds NICs to the accelerators it has just added,
   * and a map of every id cost a quarter of building a 100,000-GPU cluster.
   */
  setNic(deviceId: string, nic: string): void {
    for (let i = this.devices.length - 1; i >= 0; i--) {
      if (this.devices[i].id === deviceId) {
        (this.devices[i] as { nic?: string }).nic = nic;
        return;
      }
    }
    throw new TscclError(ErrorCode.INTERNAL, `Topology builder: no device '${deviceId}' to bind NIC '${nic}' to`);
  }

  build(name: string, description: string): Topology {
    return { name, description, devices: this.devices, links: this.links };
  }
}

/** What every server builder is told: which host it is and how its NICs look. */
export interface ServerContext {
  readonly builder: TopologyBuilder;
  readonly host: number;
  /** Prefix of device ids, e.g. "n3." on host 3. */
  readonly prefix: string;
  /** Accelerators to populate (the --gpus option), at most the server's own count. */
  readonly accelerators: number;
  readonly nics: number;
  readonly nicKind: LinkKindId;
}

export interface ServerResult {
  /** Accelerator device ids in rank order. */
  readonly accelerators: readonly string[];
  /** NIC device ids, which the fabric connects to leaf switches. */
  readonly nics: readonly string[];
  /** Ports of each NIC device, one bundle of that many links to the fabric (absent: 1). */
  readonly nicPorts?: number;
}

/**
 * Adds the server's NICs (`ctx.nics` ports) spread evenly over the given attachment points (PCIe
 * switches or CPUs), and binds each accelerator to the NIC of its own attachment point, the way
 * NCCL pairs GPU i with the NIC nearest it. `attachOf[i]` is accelerator i's attachment point.
 *
 * Where every accelerator of every point has several ports of its own (p5's four EFA per GPU,
 * two per GPU on OCI's H100 shape), they become one NIC device with a bundle of that many ports:
 * NCCL merges the ports of one NIC into a virtual NIC and spreads a GPU's ring and tree channels
 * over its nearest NICs, and aws-ofi-nccl stripes each message over a GPU's rail group, so a
 * GPU's traffic crosses all of its ports at their summed rate (docs/SIMULATOR.md, "Servers with
 * more NICs than accelerators").
 */
export function attachNics(
  ctx: ServerContext,
  points: readonly string[],
  accelerators: readonly string[],
  attachOf: readonly number[],
  busKind: LinkKindId,
): { nics: string[]; nicPorts: number } {
  const ports = fusedPorts(ctx.nics, points.length, accelerators.length, attachOf);
  if (ports > 1) {
    const nics = accelerators.map((acc, i) => {
      const nic = ctx.builder.device(`${ctx.prefix}nic${i}`, 'nic', ctx.host);
      ctx.builder.link(nic, points[attachOf[i]], busKind, ports);
      ctx.builder.setNic(acc, nic);
      return nic;
    });
    return { nics, nicPorts: ports };
  }
  const nics: string[] = [];
  for (let k = 0; k < ctx.nics; k++) {
    const point = Math.floor((k * points.length) / ctx.nics);
    const nic = ctx.builder.device(`${ctx.prefix}nic${k}`, 'nic', ctx.host);
    ctx.builder.link(nic, points[point], busKind);
    nics.push(nic);
  }
  if (nics.length === 0) return { nics, nicPorts: 1 };
  accelerators.forEach((acc, i) => {
    // Among the NICs on this accelerator's attachment point, spread accelerators round-robin.
    const local = nics.filter((_, k) => Math.floor((k * points.length) / ctx.nics) === attachOf[i]);
    const peers = accelerators.filter((_, j) => attachOf[j] === attachOf[i]);
    const choice =
      local.length > 0
        ? local[peers.indexOf(acc) % local.length]
        : nics[Math.floor((i * nics.length) / accelerators.length)];
    ctx.builder.setNic(acc, choice);
  });
  return { nics, nicPorts: 1 };
}

/**
 * Ports each accelerator's NIC bundles: k when the NICs fall evenly over the points and every
 * point holds k of them per accelerator it serves (k >= 2), else 1 (one NIC per device).
 */
function fusedPorts(nics: number, points: number, accelerators: number, attachOf: readonly number[]): number {
  if (accelerators === 0 || nics <= accelerators || nics % points !== 0) return 1;
  const perPoint = nics / points;
  const served = new Array<number>(points).fill(0);
  for (const point of attachOf) served[point]++;
  if (served.some((count) => count === 0 || perPoint % count !== 0)) return 1;
  const ports = perPoint / served[0];
  return served.every((count) => perPoint / count === ports) && ports >= 2 ? ports : 1;
}
