// The emulated cluster of the namespace benches as a topology file: `hosts` namespaces joined
// through a bridge by veth links shaped to `rate`, `perHost` process ranks on each host's TCP
// stack, with this machine's costs from its `tsccl tune` profile. Written outside the repository
// (the file carries this machine's profile); bench/topologies/ holds the copy a run without a
// profile writes.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProfile } from '../../dist/src/topology/local-profile.js';
import { detectLocal, tcpProtocol } from '../../dist/src/topology/local-topology.js';
import { loadTopology } from '../../dist/src/topology/load-topology.js';
import { TopologyGraph } from '../../dist/src/topology/topology-graph.js';

/** Gbit/s of a tc rate such as 1gbit or 500mbit. */
export function gbitOf(rate) {
  return (
    Number(/^(\d+(?:\.\d+)?)gbit$/.exec(rate)?.[1] ?? Number.NaN) ||
    Number(/^(\d+)mbit$/.exec(rate)?.[1] ?? Number.NaN) / 1000
  );
}

export function netnsTopology({ hosts, perHost, rate }) {
  const detection = detectLocal();
  const { profile, source } = loadProfile(detection.cores, detection.host);
  const n = hosts * perHost;
  // All namespaces share this machine's cores, so each host's stack forwards at most its share of
  // them (cores / hosts x the per-rank TCP rate); ranks reduce and copy at cores / ranks. The
  // protocol is --topo local's TCP protocol (a CPU overhead at both ends of every message, a
  // wake-up for a receiver that waited), on the cores the host's ranks share: one per namespace,
  // the nearest whole share of this machine's.
  const share = Math.min(1, detection.cores / n);
  const devices = [{ id: 'bridge', kind: 'switch', switchKind: 'eth-switch', label: 'Linux bridge' }];
  const links = [];
  for (let h = 0; h < hosts; h++) {
    devices.push({
      id: `h${h}.tcp`,
      kind: 'switch',
      host: h,
      switchKind: 'eth-switch',
      label: 'TCP/IP stack',
      forwardGBps: (profile.tcp.gbps * detection.cores) / hosts,
    });
    devices.push({ id: `h${h}.veth`, kind: 'nic', host: h });
    links.push({ a: `h${h}.tcp`, b: `h${h}.veth`, kind: 'on-package' });
    links.push({ a: `h${h}.veth`, b: 'bridge', kind: 'eth-1', gbps: gbitOf(rate) / 8 });
    for (let r = 0; r < perHost; r++) {
      devices.push({
        id: `h${h}.rank${r}`,
        kind: 'core',
        host: h,
        nic: `h${h}.veth`,
        reduceGBps: profile.reduceGBps * share,
        memoryGBps: profile.shm.copyGBps * share,
      });
      links.push({
        a: `h${h}.rank${r}`,
        b: `h${h}.tcp`,
        kind: 'eth-100',
        gbps: profile.tcp.gbps,
        efficiency: 1,
        latencyUs: 0,
      });
    }
  }
  const file = join(tmpdir(), `tsccl-netns-${hosts}x${perHost}-${rate}.json`);
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        name: `${hosts} namespaces x ${perHost} process ranks, veth + bridge, tbf ${rate}`,
        description: `emulated cluster of the namespace benches; TCP costs from ${source}`,
        devices,
        links,
        protocols: [tcpProtocol(profile, Math.max(1, Math.floor(detection.cores / hosts)))],
      },
      null,
      1,
    )}\n`,
  );
  return { graph: new TopologyGraph(loadTopology(file)), file, source };
}
