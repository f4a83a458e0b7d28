import type { LinkKindId } from '../catalog.js';
import { invalidArgument } from '../../errors.js';
import { type ServerContext, type ServerResult, attachNics } from './topology-builder.js';
import { pcieTree } from './nvidia-servers.js';

export interface PcieServerOptions {
  /** PCIe generation 3..6. */
  readonly gen: number;
  readonly gpusPerSwitch: number;
  readonly sockets: number;
}

/**
 * A server of PCIe-only GPUs (consumer or PCIe data-centre cards): GPUs behind PCIe switches,
 * the switches under CPU sockets joined by the socket link. GPUs on one switch exchange data
 * through it; others go up through the CPUs, which is what bounds collectives on such machines.
 */
export function pcieServer(ctx: ServerContext, options: PcieServerOptions): ServerResult {
  if (![3, 4, 5, 6].includes(options.gen))
    throw invalidArgument(`--pcie-gen ${options.gen} must be 3, 4, 5 or 6`, { argument: '--pcie-gen' });
  const pcie = `pcie${options.gen}` as LinkKindId;
  const { builder: b, prefix, host } = ctx;
  const count = ctx.accelerators;
  const switches = Math.max(1, Math.ceil(count / options.gpusPerSwitch));
  const pcieSwitches = pcieTree(ctx, switches, pcie, 'upi', Math.min(options.sockets, switches));
  const gpus = Array.from({ length: count }, (_, i) =>
    b.device(`${prefix}gpu${i}`, 'gpu', host, { memoryGBps: 1000, label: `PCIe Gen${options.gen} GPU` }),
  );
  const attachOf = gpus.map((_, i) => Math.floor(i / options.gpusPerSwitch));
  gpus.forEach((gpu, i) => {
    b.link(gpu, pcieSwitches[attachOf[i]], pcie);
  });
  return { accelerators: gpus, ...attachNics(ctx, pcieSwitches, gpus, attachOf, pcie) };
}
