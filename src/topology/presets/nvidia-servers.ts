import type { LinkKindId, SwitchKindId } from '../catalog.js';
import { type ServerContext, type ServerResult, attachNics } from './topology-builder.js';

/**
 * NVIDIA servers: a GPU baseboard whose GPUs reach each other through NVLink (directly on
 * DGX-1, through NVSwitch chips since DGX-2/A100), and reach NICs and CPUs over PCIe switches.
 * The NVSwitch chips of one board are modelled as one switch device: every GPU spreads its
 * links over all of them, so the board behaves as one non-blocking crossbar whose port to each
 * GPU is the GPU's whole NVLink bundle.
 */
export interface SwitchedBoard {
  readonly gpuLabel: string;
  readonly gpus: number;
  readonly nvlink: LinkKindId;
  readonly linksPerGpu: number;
  readonly nvswitch: SwitchKindId;
  readonly pcie: LinkKindId;
  /** GPUs (and as many NICs) behind each PCIe switch. */
  readonly gpusPerPcieSwitch: number;
  readonly memoryGBps: number;
  /** Dense BF16 peak of one GPU, TFLOPS, from NVIDIA's datasheets (docs/SIMULATOR.md). */
  readonly bf16Tflops: number;
  readonly socketLink: LinkKindId;
}

export function switchedServer(ctx: ServerContext, board: SwitchedBoard): ServerResult {
  const { builder: b, prefix, host } = ctx;
  const count = Math.min(ctx.accelerators, board.gpus);
  const nvswitch = b.switchDevice(
    `${prefix}nvswitch`,
    host,
    board.nvswitch,
    'NVSwitch chips of the baseboard, as one crossbar',
  );
  const gpus = Array.from({ length: count }, (_, i) =>
    b.device(`${prefix}gpu${i}`, 'gpu', host, {
      memoryGBps: board.memoryGBps,
      bf16Tflops: board.bf16Tflops,
      label: board.gpuLabel,
    }),
  );
  for (const gpu of gpus) b.link(gpu, nvswitch, board.nvlink, board.linksPerGpu);
  const attachOf = gpus.map((_, i) => Math.floor(i / board.gpusPerPcieSwitch));
  const pcieSwitches = pcieTree(ctx, Math.ceil(board.gpus / board.gpusPerPcieSwitch), board.pcie, board.socketLink);
  gpus.forEach((gpu, i) => {
    b.link(gpu, pcieSwitches[attachOf[i]], board.pcie);
  });
  return { accelerators: gpus, ...attachNics(ctx, pcieSwitches, gpus, attachOf, board.pcie) };
}

/** Two CPU sockets joined by their socket link, each with half of the PCIe switches below it. */
export function pcieTree(
  ctx: ServerContext,
  switches: number,
  pcie: LinkKindId,
  socketLink: LinkKindId,
  sockets = 2,
): string[] {
  const { builder: b, prefix, host } = ctx;
  const cpus = Array.from({ length: sockets }, (_, s) =>
    b.device(`${prefix}cpu${s}`, 'cpu', host, { memoryGBps: 200 }),
  );
  for (let s = 1; s < cpus.length; s++) b.link(cpus[s - 1], cpus[s], socketLink, 2);
  return Array.from({ length: switches }, (_, k) => {
    const sw = b.switchDevice(`${prefix}pcisw${k}`, host, 'pcie-switch');
    b.link(sw, cpus[Math.floor((k * sockets) / switches)], pcie);
    return sw;
  });
}

export const DGX_A100: SwitchedBoard = {
  gpuLabel: 'A100-SXM4-80GB',
  bf16Tflops: 312,
  gpus: 8,
  nvlink: 'nvlink3',
  linksPerGpu: 12,
  nvswitch: 'nvswitch2',
  pcie: 'pcie4',
  gpusPerPcieSwitch: 2,
  memoryGBps: 2039,
  socketLink: 'upi',
};
export const DGX_H100: SwitchedBoard = {
  gpuLabel: 'H100-SXM5-80GB',
  bf16Tflops: 989,
  gpus: 8,
  nvlink: 'nvlink4',
  linksPerGpu: 18,
  nvswitch: 'nvswitch3',
  pcie: 'pcie5',
  gpusPerPcieSwitch: 2,
  memoryGBps: 3350,
  socketLink: 'upi',
};
export const HGX_H200: SwitchedBoard = { ...DGX_H100, gpuLabel: 'H200-SXM-141GB', memoryGBps: 4800 };
/** The H100 board with the export part's NVLink: 8 NVLink 4 links a GPU, 400 GB/s both ways (hardware.md). */
export const HGX_H800: SwitchedBoard = { ...DGX_H100, gpuLabel: 'H800-SXM5-80GB', linksPerGpu: 8 };
export const DGX_B200: SwitchedBoard = {
  gpuLabel: 'B200',
  bf16Tflops: 2250,
  gpus: 8,
  nvlink: 'nvlink5',
  linksPerGpu: 18,
  nvswitch: 'nvswitch4',
  pcie: 'pcie5',
  gpusPerPcieSwitch: 2,
  memoryGBps: 8000,
  socketLink: 'upi',
};

/**
 * DGX-1 with V100: the hybrid cube-mesh. Each GPU has 6 NVLink2 links; the number of links
 * between each pair (the `nvidia-smi topo -m` matrix of a DGX-1V) is below. Pairs with no NVLink
 * go over PCIe and the CPUs.
 */
const DGX1_NVLINKS: readonly (readonly [number, number, number])[] = [
  [0, 1, 1],
  [0, 2, 1],
  [0, 3, 2],
  [0, 4, 2],
  [1, 2, 2],
  [1, 3, 1],
  [1, 5, 2],
  [2, 3, 2],
  [2, 6, 1],
  [3, 7, 1],
  [4, 5, 1],
  [4, 6, 1],
  [4, 7, 2],
  [5, 6, 2],
  [5, 7, 1],
  [6, 7, 2],
];

export function dgx1Server(ctx: ServerContext): ServerResult {
  const { builder: b, prefix, host } = ctx;
  const count = Math.min(ctx.accelerators, 8);
  const gpus = Array.from({ length: count }, (_, i) =>
    b.device(`${prefix}gpu${i}`, 'gpu', host, { memoryGBps: 900, label: 'V100-SXM2-32GB' }),
  );
  for (const [x, y, links] of DGX1_NVLINKS) if (x < count && y < count) b.link(gpus[x], gpus[y], 'nvlink2', links);
  const attachOf = gpus.map((_, i) => Math.floor(i / 2));
  const pcieSwitches = pcieTree(ctx, 4, 'pcie3', 'upi');
  gpus.forEach((gpu, i) => {
    b.link(gpu, pcieSwitches[attachOf[i]], 'pcie3');
  });
  return { accelerators: gpus, ...attachNics(ctx, pcieSwitches, gpus, attachOf, 'pcie3') };
}

/**
 * GB200 NVL72: 18 compute trays of 2 Grace CPUs and 4 B200 GPUs, all 72 GPUs on one NVLink 5
 * switch fabric (9 switch trays, modelled as one crossbar), each GPU with 18 links. The rack is
 * one scale-up domain, so it is one host here; each GPU has its own 400 Gb/s NIC, so the NIC
 * count follows the GPUs (--gpus) and --nics-per-node cannot change it.
 */
export function gb200Nvl72(ctx: ServerContext): ServerResult {
  const { builder: b, prefix, host } = ctx;
  const count = Math.min(ctx.accelerators, 72);
  const fabric = b.switchDevice(`${prefix}nvlink-switch`, host, 'nvswitch4', 'NVLink switch trays');
  const gpus: string[] = [];
  const graces: string[] = [];
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      const grace = b.device(`${prefix}grace${i / 2}`, 'cpu', host, { memoryGBps: 500 });
      graces.push(grace);
    }
    const gpu = b.device(`${prefix}gpu${i}`, 'gpu', host, { memoryGBps: 8000, label: 'B200 (GB200)' });
    b.link(gpu, fabric, 'nvlink5', 18);
    b.link(gpu, graces[graces.length - 1], 'nvlink-c2c');
    gpus.push(gpu);
  }
  const nics = gpus.map((gpu, i) => {
    // Each GPU's own ConnectX NIC, on the PCIe of the Grace the GPU hangs off: the trays' Graces
    // have no link to each other, so a GPU could not reach a NIC on another Grace.
    const nic = b.device(`${prefix}nic${i}`, 'nic', host);
    b.link(nic, graces[Math.floor(i / 2)], 'pcie5');
    b.setNic(gpu, nic);
    return nic;
  });
  return { accelerators: gpus, nics };
}

/**
 * A GH200 server: one Grace Hopper superchip, the H100 joined to its Grace by NVLink-C2C, the
 * NICs on the Grace's PCIe 5. Servers join over the NICs only (NVL32 racks, whose NVLink spans
 * servers, are not modelled). Several NIC ports act as one NIC of their summed rate (attachNics).
 * GPUDirect RDMA goes over the C2C link, which NCCL allows by default since 2.27
 * (NCCL_NET_GDR_C2C); `--gdr off` stages in the Grace's memory.
 */
export function gh200Server(ctx: ServerContext): ServerResult {
  const { builder: b, prefix, host } = ctx;
  const grace = b.device(`${prefix}grace`, 'cpu', host, { memoryGBps: 500 });
  const gpu = b.device(`${prefix}gpu0`, 'gpu', host, { memoryGBps: 4000, label: 'H100 96GB (GH200)' });
  b.link(gpu, grace, 'nvlink-c2c');
  return { accelerators: [gpu], ...attachNics(ctx, [grace], [gpu], [0], 'pcie5') };
}
