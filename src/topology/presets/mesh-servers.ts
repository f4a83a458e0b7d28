import { type ServerContext, type ServerResult, attachNics } from './topology-builder.js';
import { pcieTree } from './nvidia-servers.js';

/**
 * Full-mesh servers: every accelerator has one direct link to every other, and no switch in
 * between. A group of k accelerators can only use the k-1 links among its own members, which is
 * why tensor-parallel groups smaller than the server leave links idle.
 */

/** AMD MI300X platform: 8 OAM GPUs, 7 xGMI links each (one per peer), one NIC per GPU over PCIe 5. */
export function mi300xServer(ctx: ServerContext): ServerResult {
  const { builder: b, prefix, host } = ctx;
  const count = Math.min(ctx.accelerators, 8);
  const gpus = Array.from({ length: count }, (_, i) =>
    b.device(`${prefix}gpu${i}`, 'gpu', host, { memoryGBps: 5300, label: 'MI300X' }),
  );
  for (let i = 0; i < count; i++) for (let j = i + 1; j < count; j++) b.link(gpus[i], gpus[j], 'xgmi3');
  const attachOf = gpus.map((_, i) => i);
  const pcieSwitches = pcieTree(ctx, 8, 'pcie5', 'upi');
  gpus.forEach((gpu, i) => {
    b.link(gpu, pcieSwitches[i], 'pcie5');
  });
  return { accelerators: gpus, ...attachNics(ctx, pcieSwitches, gpus, attachOf, 'pcie5') };
}

/**
 * Huawei Atlas 800T A2 class server: 8 Ascend 910B NPUs in an HCCS full mesh (7 links each), each
 * NPU with its own integrated Ethernet port for RoCE to the cluster, and PCIe 4 to 4 CPUs.
 */
export function ascend910bServer(ctx: ServerContext): ServerResult {
  const { builder: b, prefix, host } = ctx;
  const count = Math.min(ctx.accelerators, 8);
  const npus = Array.from({ length: count }, (_, i) =>
    b.device(`${prefix}npu${i}`, 'npu', host, { memoryGBps: 1600, label: 'Ascend 910B' }),
  );
  for (let i = 0; i < count; i++) for (let j = i + 1; j < count; j++) b.link(npus[i], npus[j], 'hccs');
  const pcieSwitches = pcieTree(ctx, 4, 'pcie4', 'upi', 4);
  npus.forEach((npu, i) => {
    b.link(npu, pcieSwitches[Math.floor(i / 2)], 'pcie4');
  });
  const nics = npus.map((npu, i) => {
    // The RoCE port is on the NPU die: one NIC per NPU, joined on-package.
    const nic = b.device(`${prefix}roce${i}`, 'nic', host);
    b.link(npu, nic, 'on-package');
    b.setNic(npu, nic);
    return nic;
  });
  return { accelerators: npus, nics };
}
