import { invalidArgument } from '../../errors.js';
import type { Topology } from '../topology-schema.js';
import { type ClusterOptions, type Fabric, type NicFamily, buildCluster } from './cluster.js';
import { ascend910bServer, mi300xServer } from './mesh-servers.js';
import {
  DGX_A100,
  DGX_B200,
  DGX_H100,
  HGX_H200,
  HGX_H800,
  type SwitchedBoard,
  dgx1Server,
  gb200Nvl72,
  gh200Server,
  switchedServer,
} from './nvidia-servers.js';
import { pcieServer } from './pcie-server.js';
import type { ServerContext, ServerResult } from './topology-builder.js';

/** Options every preset takes (the `tsccl topo` / `tsccl sim` flags). Absent means the preset's default. */
export interface PresetOptions {
  readonly gpus?: number;
  readonly nodes?: number;
  readonly nicsPerNode?: number;
  readonly nicGbps?: number;
  readonly nicKind?: NicFamily;
  readonly fabric?: Fabric;
  readonly pcieGen?: number;
  readonly gpusPerSwitch?: number;
  readonly sockets?: number;
  /** pcie-server: false when the GPUs cannot reach each other's memory (consumer cards): messages between them are staged in host memory. */
  readonly p2p?: boolean;
  /** GPUDirect RDMA between hosts: on, off, or auto (NCCL's rule; the topology's own setting if absent). */
  readonly gdr?: 'auto' | 'on' | 'off';
}

interface Preset {
  readonly description: string;
  readonly accelerators: number;
  readonly nics: number;
  readonly nicKind: NicFamily;
  readonly nicGbps: number;
  /** One NIC per accelerator, fixed by the hardware (an integrated port, or each GPU's own NIC). */
  readonly fixedNics?: boolean;
  /** The collective library its accelerators run, whose choices `tsccl sim` predicts. */
  readonly library?: Topology['library'];
  /** The channels that library sets up on the board (docs/SIMULATOR.md: where each count comes from). */
  readonly libraryChannels?: Topology['libraryChannels'];
  server(ctx: ServerContext, options: PresetOptions): ServerResult;
}

const board = (b: SwitchedBoard) => (ctx: ServerContext) => switchedServer(ctx, b);

/**
 * NCCL's ring and tree channels on an NVSwitch board: two per NVLink of a GPU, at most its 32
 * (MAXCHANNELS); NVLS channels are the switch's (catalog.ts). Sources in docs/SIMULATOR.md.
 */
const nvlinkChannels = (linksPerGpu: number): number => Math.min(NCCL_MAX_CHANNELS, 2 * linksPerGpu);
const NCCL_MAX_CHANNELS = 32;

export const PRESETS: Readonly<Record<string, Preset>> = {
  'dgx1-v100': {
    description: 'DGX-1: 8 V100, NVLink 2 hybrid cube-mesh, PCIe 3, 4 x EDR 100 Gb/s',
    accelerators: 8,
    nics: 4,
    nicKind: 'ib',
    nicGbps: 100,
    library: 'nccl',
    server: dgx1Server,
  },
  'dgx-a100': {
    description: 'DGX A100: 8 A100, 6 NVSwitch gen2 (12 NVLink 3 per GPU), PCIe 4, 8 x HDR 200 Gb/s',
    accelerators: 8,
    nics: 8,
    nicKind: 'ib',
    nicGbps: 200,
    library: 'nccl',
    libraryChannels: nvlinkChannels(DGX_A100.linksPerGpu),
    server: board(DGX_A100),
  },
  'dgx-h100': {
    description: 'DGX H100: 8 H100, 4 NVSwitch gen3 with NVLS (18 NVLink 4 per GPU), PCIe 5, 8 x NDR 400 Gb/s',
    accelerators: 8,
    nics: 8,
    nicKind: 'ib',
    nicGbps: 400,
    library: 'nccl',
    libraryChannels: nvlinkChannels(DGX_H100.linksPerGpu),
    server: board(DGX_H100),
  },
  'hgx-h200': {
    description: 'HGX H200: 8 H200, 4 NVSwitch gen3 with NVLS (18 NVLink 4 per GPU), PCIe 5, 8 x 400 Gb/s',
    accelerators: 8,
    nics: 8,
    nicKind: 'ib',
    nicGbps: 400,
    library: 'nccl',
    libraryChannels: nvlinkChannels(HGX_H200.linksPerGpu),
    server: board(HGX_H200),
  },
  'hgx-h800': {
    description: 'HGX H800: 8 H800, NVSwitch gen3 with NVLS (8 NVLink 4 per GPU), PCIe 5, 8 x 400 Gb/s',
    accelerators: 8,
    nics: 8,
    nicKind: 'ib',
    nicGbps: 400,
    library: 'nccl',
    libraryChannels: nvlinkChannels(HGX_H800.linksPerGpu),
    server: board(HGX_H800),
  },
  'dgx-b200': {
    description: 'DGX B200: 8 B200, NVSwitch gen4 (18 NVLink 5 per GPU), PCIe 5, 8 x 400 Gb/s',
    accelerators: 8,
    nics: 8,
    nicKind: 'ib',
    nicGbps: 400,
    library: 'nccl',
    libraryChannels: nvlinkChannels(DGX_B200.linksPerGpu),
    server: board(DGX_B200),
  },
  'gb200-nvl72': {
    description: 'GB200 NVL72: 72 B200 on one NVLink 5 switch fabric, 36 Grace CPUs, one 400 Gb/s NIC per GPU',
    accelerators: 72,
    nics: 72,
    nicKind: 'ib',
    nicGbps: 400,
    fixedNics: true,
    library: 'nccl',
    server: gb200Nvl72,
  },
  gh200: {
    description: 'GH200 server: one Grace Hopper superchip (H100 96GB and Grace over NVLink-C2C), 1 x 400 Gb/s IB',
    accelerators: 1,
    nics: 1,
    nicKind: 'ib',
    nicGbps: 400,
    library: 'nccl',
    server: gh200Server,
  },
  mi300x: {
    description: 'AMD MI300X platform: 8 GPUs, xGMI full mesh (7 links each), PCIe 5, 8 x 400 Gb/s RoCE',
    accelerators: 8,
    nics: 8,
    nicKind: 'roce',
    nicGbps: 400,
    library: 'rccl',
    server: mi300xServer,
  },
  'ascend-910b': {
    description: 'Ascend 910B server: 8 NPUs, HCCS full mesh (7 links each), one integrated 200 GbE RoCE port per NPU',
    accelerators: 8,
    nics: 8,
    nicKind: 'roce',
    nicGbps: 200,
    fixedNics: true,
    server: ascend910bServer,
  },
  'pcie-server': {
    description:
      'PCIe server: GPUs behind PCIe switches under CPU sockets (--pcie-gen, --gpus-per-switch, --sockets, --p2p), 1 x 100 GbE',
    accelerators: 8,
    nics: 1,
    nicKind: 'ethernet',
    nicGbps: 100,
    library: 'nccl',
    server: (ctx, o) =>
      pcieServer(ctx, { gen: o.pcieGen ?? 4, gpusPerSwitch: o.gpusPerSwitch ?? 2, sockets: o.sockets ?? 2 }),
  },
};

export const PRESET_NAMES = Object.keys(PRESETS);

/** Builds a preset with options; errors name the option and the allowed range. */
export function buildPreset(name: string, options: PresetOptions = {}): Topology {
  const preset = PRESETS[name];
  if (preset === undefined)
    throw invalidArgument(`Unknown topology '${name}': expected a file path or one of ${PRESET_NAMES.join(', ')}`, {
      argument: '--topo',
    });
  const positive = (value: number | undefined, flag: string, max = Infinity) => {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1 && value <= max)) {
      throw invalidArgument(
        `${flag} ${value} must be an integer from 1 to ${max === Infinity ? 'any' : max} for ${name}`,
        { argument: flag },
      );
    }
  };
  // Every preset but pcie-server is one fixed board: its accelerator count and layout are the hardware's.
  const fixedBoard = name !== 'pcie-server';
  positive(options.gpus, '--gpus', fixedBoard ? preset.accelerators : 1024);
  positive(options.nodes, '--nodes', 65536);
  positive(options.nicsPerNode, '--nics-per-node', 1024);
  if (options.nicGbps !== undefined && !(options.nicGbps > 0))
    throw invalidArgument(`--nic-gbps ${options.nicGbps} must be positive`, { argument: '--nic-gbps' });
  if (preset.fixedNics && options.nicsPerNode !== undefined && options.nicsPerNode !== preset.nics) {
    throw invalidArgument(`${name} has one NIC per accelerator (${preset.nics}); --nics-per-node cannot change that`, {
      argument: '--nics-per-node',
    });
  }
  if (fixedBoard) {
    // Silently dropping them would answer a question about another machine than the one asked.
    const board = [
      ['--pcie-gen', options.pcieGen],
      ['--gpus-per-switch', options.gpusPerSwitch],
      ['--sockets', options.sockets],
      ['--p2p', options.p2p],
    ] as const;
    const given = board.find(([, value]) => value !== undefined);
    if (given !== undefined)
      throw invalidArgument(`${given[0]} describes pcie-server only; ${name} has a fixed board`, {
        argument: given[0],
      });
  }
  const nodes = options.nodes ?? 1;
  const cluster: ClusterOptions = {
    nodes,
    accelerators: options.gpus ?? preset.accelerators,
    nicsPerNode: options.nicsPerNode ?? preset.nics,
    nicFamily: options.nicKind ?? preset.nicKind,
    nicGbps: options.nicGbps ?? preset.nicGbps,
    fabric: options.fabric ?? 'rail',
    leafDownPorts: 32,
  };
  const shape = nodes > 1 ? `${nodes} x ` : '';
  const topology = buildCluster(`${shape}${name}`, preset.description, cluster, (ctx) => preset.server(ctx, options));
  const staged =
    options.p2p === false
      ? {
          ...topology,
          peerToPeer: false,
          description: `${topology.description}; GPU peer-to-peer off: messages staged in host memory`,
        }
      : topology;
  const withGdr = options.gdr === undefined ? staged : { ...staged, gpuDirectRdma: options.gdr };
  if (preset.library === undefined) return withGdr;
  return preset.libraryChannels === undefined
    ? { ...withGdr, library: preset.library }
    : { ...withGdr, library: preset.library, libraryChannels: preset.libraryChannels };
}
