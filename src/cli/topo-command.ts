import { PRESET_NAMES } from '../topology/presets/presets.js';
import type { Command, Option } from 'commander';
import { jobFromEnv } from '../job/env-job.js';
import { LINK_KINDS } from '../topology/catalog.js';
import { loadProfile } from '../topology/local-profile.js';
import { detectLocal } from '../topology/local-topology.js';
import { loadTopology } from '../topology/load-topology.js';
import { topologyJsonSchema } from '../topology/topology-schema.js';
import { TopologyGraph } from '../topology/topology-graph.js';
import { addTopologyOptions, presetOptions } from './topology-options.js';

export function topoCommand(program: Command, format: () => Option): void {
  const topo = program.command('topo').description('hardware topologies: show a preset or file, print the file schema');
  addTopologyOptions(
    topo
      .command('show')
      .description('devices and links of a preset or topology file, with per-direction bandwidth')
      .argument('<topology>', `preset name (${PRESET_NAMES.join(', ')}) or .json file`),
  )
    .addOption(format())
    .action((spec: string, flags: Record<string, unknown>) => {
      const topology = loadTopology(spec, presetOptions(flags));
      if (flags.format === 'json') {
        process.stdout.write(`${JSON.stringify(topology, null, 2)}\n`);
        return;
      }
      const graph = new TopologyGraph(topology);
      const lines = [
        `# ${topology.name}: ${topology.description ?? ''}`,
        `# ${graph.accelerators.length} accelerators, ${topology.devices.length} devices, ${topology.links.length} link bundles`,
      ];
      const kinds = new Map<string, number>();
      for (const d of topology.devices) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
      lines.push(`# devices: ${[...kinds].map(([k, c]) => `${c} ${k}`).join(', ')}`);
      lines.push(
        `#${'a'.padStart(20)}  ${'b'.padEnd(20)}${'kind'.padEnd(12)}${'links'.padStart(6)}${'raw GB/s'.padStart(10)}${'sustained'.padStart(11)}${'latency us'.padStart(12)}`,
      );
      for (const link of topology.links) {
        const c = LINK_KINDS[link.kind];
        const raw = (link.gbps ?? c.gbps) * link.count;
        const sustained = raw * (link.efficiency ?? c.efficiency);
        lines.push(
          ` ${link.a.padStart(20)}  ${link.b.padEnd(20)}${link.kind.padEnd(12)}${String(link.count).padStart(6)}${raw.toFixed(1).padStart(10)}${sustained.toFixed(1).padStart(11)}${(link.latencyUs ?? c.latencyUs).toFixed(2).padStart(12)}`,
        );
      }
      lines.push('# bandwidths are per direction; links are full duplex');
      process.stdout.write(`${lines.join('\n')}\n`);
    });
  topo
    .command('detect')
    .description(
      'this machine in the topology model: cores, NUMA nodes, interfaces and speeds, the profile in use, and the rank layout when started as a rank of a job',
    )
    .addOption(format())
    .action((flags: Record<string, unknown>) => {
      const detection = detectLocal();
      const { profile, source } = loadProfile(detection.cores, detection.host);
      const job = jobFromEnv();
      const layout =
        job === undefined
          ? null
          : {
              source: job.source,
              rank: job.rank,
              size: job.size,
              localRank: job.localRank,
              localSize: job.localSize,
              host: detection.host,
            };
      if (flags.format === 'json') {
        process.stdout.write(
          `${JSON.stringify({ ...detection, profile, profileSource: source, job: layout }, null, 2)}\n`,
        );
        return;
      }
      const cores =
        detection.cores === detection.machineCores
          ? `${detection.cores} cores`
          : `${detection.cores} of ${detection.machineCores} cores, as this process's CPU affinity allows`;
      const lines = [
        `# ${detection.host}: ${cores} (${detection.cpuModel}), ${detection.numaNodes.length} NUMA node(s)`,
      ];
      for (const node of detection.numaNodes) lines.push(`  numa${node.id}: cpus ${node.cpus.join(',')}`);
      for (const i of detection.interfaces)
        lines.push(
          `  ${i.name.padEnd(12)} ${i.internal ? 'loopback' : i.speedMbps === null ? 'speed unknown' : `${i.speedMbps} Mb/s`}  ${i.addresses.join(' ')}`,
        );
      lines.push(`# profile: ${source}`);
      lines.push(
        `  shm: ${profile.shm.callUs.toFixed(1)} us per call, ${profile.shm.messageUs.toFixed(1)} us per message (${profile.shm.oversubscribedMessageUs.toFixed(1)} with more ranks than cores${profile.shm.oversubscribedSwitchUs === undefined ? '' : `, ${profile.shm.oversubscribedSwitchUs.toFixed(1)} of it on a core`}), ${profile.shm.copyGBps.toFixed(2)} GB/s; one-shot ${profile.shm.oneShotUs?.toFixed(1) ?? 'unmeasured'} us per call, ${profile.shm.oneShotGBps?.toFixed(2) ?? 'unmeasured'} GB/s`,
      );
      lines.push(
        `  tcp: ${profile.tcp.callUs.toFixed(1)} us per call, ${profile.tcp.messageUs.toFixed(1)} us per message (${profile.tcp.overheadUs?.toFixed(1) ?? 'unmeasured'} of it CPU at each end), ${profile.tcp.gbps.toFixed(2)} GB/s each way${profile.tcp.sizeTiers === undefined ? '' : ` (${profile.tcp.sizeTiers.map((t) => `${t.bytes / 1024} KiB ${t.gbps.toFixed(2)}`).join(', ')})`}, one way alone ${profile.tcp.streamGBps?.toFixed(2) ?? 'unmeasured'} GB/s; one-shot ${profile.tcp.oneShotUs?.toFixed(1) ?? 'unmeasured'} us per call; reduce ${profile.reduceGBps.toFixed(2)} GB/s`,
      );
      lines.push(
        layout === null
          ? '# not started as a rank of a job (torchrun, mpirun, srun, tsccl launch)'
          : `# rank ${layout.rank} of ${layout.size} (${layout.source}), local rank ${layout.localRank} of ${layout.localSize} on ${layout.host}`,
      );
      process.stdout.write(`${lines.join('\n')}\n`);
    });
  topo
    .command('schema')
    .description('JSON Schema of the topology file format')
    .action(() => {
      process.stdout.write(`${JSON.stringify(topologyJsonSchema(), null, 2)}\n`);
    });
}
