import { type Command, Option } from 'commander';
import { FABRICS, NIC_FAMILIES } from '../topology/presets/cluster.js';
import type { LoadOptions } from '../topology/load-topology.js';
import { parsePositiveInt } from './parse.js';

/** The preset flags `tsccl topo show` and `tsccl sim` share. */
export function addTopologyOptions(command: Command): Command {
  return command
    .option('-g, --gpus <n>', 'use N accelerators of each server (with --topo local: N ranks)', (v) =>
      parsePositiveInt(v, '--gpus'),
    )
    .option('--procs', '--topo local: process ranks over TCP (default: thread ranks over shared memory)')
    .option('--nodes <n>', 'servers joined by the network fabric', (v) => parsePositiveInt(v, '--nodes'))
    .option('--nics-per-node <k>', 'NICs per server', (v) => parsePositiveInt(v, '--nics-per-node'))
    .option('--nic-gbps <g>', 'line rate of each NIC in Gb/s', (v) => parsePositiveInt(v, '--nic-gbps'))
    .addOption(new Option('--nic-kind <kind>', 'NIC family').choices([...NIC_FAMILIES]))
    .addOption(
      new Option('--fabric <fabric>', 'how servers are joined (rail: NIC i of every server on leaf i)').choices([
        ...FABRICS,
      ]),
    )
    .option('--pcie-gen <n>', 'pcie-server: PCIe generation 3-6', (v) => parsePositiveInt(v, '--pcie-gen'))
    .option('--gpus-per-switch <n>', 'pcie-server: GPUs behind each PCIe switch', (v) =>
      parsePositiveInt(v, '--gpus-per-switch'),
    )
    .option('--sockets <n>', 'pcie-server: CPU sockets', (v) => parsePositiveInt(v, '--sockets'))
    .addOption(
      new Option(
        '--gdr <auto|on|off>',
        "GPUDirect RDMA between hosts: auto (NCCL's default rule: direct unless the way from a GPU to its NIC crosses a CPU's PCIe root), on, or off (messages staged in host memory at both ends)",
      ).choices(['auto', 'on', 'off']),
    )
    .addOption(
      new Option(
        '--p2p <on|off>',
        "pcie-server: off when the GPUs cannot reach each other's memory (consumer cards): messages are staged in host memory",
      ).choices(['on', 'off']),
    );
}

export function presetOptions(flags: Record<string, unknown>): LoadOptions {
  return {
    procs: flags.procs === true,
    gpus: flags.gpus as number | undefined,
    nodes: flags.nodes as number | undefined,
    nicsPerNode: flags.nicsPerNode as number | undefined,
    nicGbps: flags.nicGbps as number | undefined,
    nicKind: flags.nicKind as LoadOptions['nicKind'],
    fabric: flags.fabric as LoadOptions['fabric'],
    pcieGen: flags.pcieGen as number | undefined,
    gpusPerSwitch: flags.gpusPerSwitch as number | undefined,
    sockets: flags.sockets as number | undefined,
    p2p: flags.p2p === undefined ? undefined : flags.p2p === 'on',
    gdr: flags.gdr as LoadOptions['gdr'],
  };
}
