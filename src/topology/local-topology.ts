import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { availableParallelism, cpus, hostname, networkInterfaces } from 'node:os';
import {
  DEFAULT_ONE_SHOT,
  DEFAULT_INVALIDATION_TIERS,
  DEFAULT_PEER_WRITTEN_GBPS,
  DEFAULT_RELEASE_US,
  DEFAULT_TCP_ONE_SHOT_US,
  DEFAULT_TCP_OVERHEAD_US,
  type LocalProfile,
  TCP_RATE_BYTES,
  copyAtProfileWorkingSet,
  foldAtProfileWorkingSet,
  tcpStreamGBps,
} from './local-profile.js';
import { cacheScale } from './cache-tiers.js';
import type { Topology, TopologyProtocol } from './topology-schema.js';
import { TopologyBuilder } from './presets/topology-builder.js';

export interface NumaNode {
  readonly id: number;
  readonly cpus: readonly number[];
}

export interface NetworkInterface {
  readonly name: string;
  readonly addresses: readonly string[];
  /** Link speed the kernel reports (Mb/s), or null when it reports none (loopback, many VMs). */
  readonly speedMbps: number | null;
  readonly internal: boolean;
}

export interface LocalDetection {
  readonly host: string;
  /** The cores this process may run on: what its ranks take turns on. */
  readonly cores: number;
  /** Every core the machine has, bound to this process or not. */
  readonly machineCores: number;
  readonly cpuModel: string;
  readonly numaNodes: readonly NumaNode[];
  readonly interfaces: readonly NetworkInterface[];
}

/** Parses a Linux cpulist such as "0-3,8,10-11". */
export function parseCpuList(text: string): number[] {
  return text
    .trim()
    .split(',')
    .filter((s) => s !== '')
    .flatMap((part) => {
      const [a, b] = part.split('-').map(Number);
      return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
    });
}

/**
 * This machine: cores, NUMA nodes (from /sys, or one node of every core), interfaces and their speeds.
 * The cores are those this process may run on (its CPU affinity, as `taskset`, Slurm's
 * --cpu-bind or a container's cpuset leave it), not every core the machine has: ranks take
 * turns on them, and a rank spins or yields by that count (transport/wait.ts), so the model
 * of the machine must count the same cores.
 */
export function detectLocal(sys = '/sys'): LocalDetection {
  const cores = availableParallelism();
  const machine = cpus();
  const nodeDir = `${sys}/devices/system/node`;
  let numaNodes: NumaNode[] = [];
  if (existsSync(nodeDir)) {
    numaNodes = readdirSync(nodeDir)
      .filter((d) => /^node\d+$/.test(d))
      .map((d) => ({
        id: Number(d.slice(4)),
        cpus: parseCpuList(readFileSync(`${nodeDir}/${d}/cpulist`, 'utf8')),
      }))
      .sort((a, b) => a.id - b.id);
  }
  if (numaNodes.length === 0) numaNodes = [{ id: 0, cpus: machine.map((_, i) => i) }];
  const interfaces = Object.entries(networkInterfaces()).map(([name, addrs]) => {
    let speedMbps: number | null = null;
    try {
      const speed = Number(readFileSync(`${sys}/class/net/${name}/speed`, 'utf8'));
      if (Number.isFinite(speed) && speed > 0) speedMbps = speed;
    } catch {
      // No speed file, or EINVAL on reading it: the kernel does not know the speed.
    }
    return {
      name,
      addresses: (addrs ?? []).map((a) => a.address),
      speedMbps,
      internal: (addrs ?? []).some((a) => a.internal),
    };
  });
  return {
    host: hostname(),
    cores,
    machineCores: machine.length,
    cpuModel: machine[0]?.model ?? 'unknown',
    numaNodes,
    interfaces,
  };
}

export interface LocalTopologyOptions {
  readonly ranks: number;
  /** Thread ranks over shared memory, or process ranks over TCP on this host. */
  readonly transport: 'shm' | 'tcp';
  readonly profile: LocalProfile;
  readonly detection: LocalDetection;
}

/**
 * This machine as a topology in the same model as the presets: each rank a `core` device with
 * its measured reduction speed, joined through the NUMA node (shared memory) or the host's TCP
 * stack (processes), which forwards at most cores x the per-rank rate; a process reaches the
 * stack through its socket end, which bounds what it sends and receives together. The protocol
 * is the measured one: a fixed cost per call, and a hand-off per message that the receiving
 * rank's thread spends on a core it shares with the others (more ranks than cores queue for them).
 * Thread ranks pull: each copies its messages out of the sender's memory itself, at its own
 * core's copy speed (its link), all of them within what the cores copy together (the hub).
 */
export function localTopology(options: LocalTopologyOptions): Topology {
  const { profile, detection, ranks } = options;
  const b = new TopologyBuilder();
  const perRank = options.transport === 'shm' ? profile.shm.copyGBps : profile.tcp.gbps;
  // The cores are one pool that all ranks' copies share: the hub forwards at most cores x the
  // per-rank rate, so a rank working alone gets a whole core and ranks working together split them.
  // Processes that outnumber the cores move as much together: each byte costs its sender and its
  // receiver CPU time wherever they run (4 processes on 2 cores, all sending to all, moved 4.4-4.9
  // GB/s where 2 moved 3.9-4.15; see SIMULATOR.md for the ring, which stalls below that).
  const forwardGBps = perRank * detection.cores;
  // Messages that fit the socket buffers and caches move faster (the profile's rates by size):
  // each process's socket end and its links take them at its rate for the call's working set. The
  // stack's forwarding, what all processes move together, takes them so only while each process
  // has a core; past that, taking turns on the cores bounds it at every size. Tiers on the stack of
  // 4 processes put those rows further off: three measurements rescored with 13 tunes, median
  // error 20.2% on average and 29% at worst, against 18.2% and 25% with tiers on their ends alone
  // (18.9% and 25% with none: there the tree all-reduce of 256 KiB, whose hops each move a whole
  // message while the other processes wait, came out 549 us against 295 measured).
  const loopback = options.transport === 'tcp' ? loopbackTiersOf(profile) : {};
  const stackLoopback = ranks <= detection.cores ? loopback : {};
  const hub =
    options.transport === 'shm'
      ? b.device('numa0', 'cpu', 0, {
          memoryGBps: profile.shm.copyGBps * detection.cores,
          label: detection.cpuModel,
          forwardGBps,
          ...cacheTiersOf(profile),
        })
      : b.device('tcp-stack', 'switch', 0, {
          switchKind: 'eth-switch',
          label: "the host's TCP/IP stack (loopback)",
          forwardGBps,
          ...stackLoopback,
        });
  const streamGBps = tcpStreamGBps(profile);
  for (let r = 0; r < ranks; r++) {
    const rank = b.device(`rank${r}`, 'core', 0, { reduceGBps: profile.reduceGBps, memoryGBps: profile.shm.copyGBps });
    if (options.transport === 'shm') {
      b.links.push({ a: rank, b: hub, kind: 'shm', count: 1, gbps: perRank, efficiency: 1, latencyUs: 0 });
      continue;
    }
    // A process's CPU both sends and receives: what it moves both ways together is bounded (its
    // socket end forwards 2 x gbps, the sendrecv's rate each way), and one way alone by the stream.
    const end = b.device(`rank${r}-socket`, 'nic', 0, {
      forwardGBps: 2 * perRank,
      label: `rank ${r}'s process: its sends and receives share its CPU`,
      ...loopback,
    });
    for (const [a, z] of [
      [rank, end],
      [end, hub],
    ])
      b.links.push({
        a,
        b: z,
        kind: 'eth-100',
        count: 1,
        gbps: Math.max(perRank, streamGBps),
        efficiency: 1,
        latencyUs: 0,
      });
  }
  const host = `${detection.cores} cores, ${detection.numaNodes.length} NUMA node(s); profile measured ${profile.measuredAt ?? 'never (defaults)'}`;
  return {
    ...b.build(`local (${detection.host}, ${ranks} ${options.transport === 'shm' ? 'thread' : 'process'} ranks)`, host),
    protocols: [
      options.transport === 'tcp'
        ? tcpProtocol(profile, detection.cores)
        : shmProtocol(profile, ranks, detection.cores),
    ],
  };
}

/**
 * The thread ranks' protocol: a fixed cost per call, and a hand-off per message that costs the
 * receiver a wake-up when it had to wait (the simulator charges it then, on a core), not a link
 * latency: a message already there is taken at once by a rank with a core. Ranks that outnumber
 * the cores pay a hand-off for every message and queue for the cores (the measured oversubscribed
 * hand-off), so a rank's reduction runs at the kernel's full speed once it has one. The hand-off
 * is measured on twice as many ranks as cores and charged once per message at any count: since
 * the ranks' copies take turns on the cores with the hand-offs (flow-sim.ts), charging it once
 * per other rank on the core (3 times for 8 ranks on 2 cores, as from e7171b5) put the 8-rank
 * rows under 64 KiB of four regret grids at a median error of 216% (39% charged once). Of a
 * crowded hand-off only the profile's oversubscribedSwitchUs per other rank on the core takes a
 * core (wakeWorkUs); the rest is latency that the other ranks' work hides (see SIMULATOR.md).
 */
function shmProtocol(profile: LocalProfile, ranks: number, cores: number): TopologyProtocol {
  const crowded = ranks > cores;
  const wakeUs = crowded ? profile.shm.oversubscribedMessageUs : profile.shm.messageUs;
  const switchUs = profile.shm.oversubscribedSwitchUs;
  return {
    name: 'shm',
    baseUs: profile.shm.callUs,
    stepUs: 0,
    netStepUs: 0,
    efficiency: 1,
    wakeUs,
    releaseUs: profile.shm.releaseUs ?? DEFAULT_RELEASE_US,
    rankCores: cores,
    pull: true,
    ...(crowded && switchUs !== undefined ? { wakeWorkUs: Math.min(wakeUs, switchUs * (ranks / cores - 1)) } : {}),
    freshReadGBps: profile.shm.peerWrittenGBps ?? DEFAULT_PEER_WRITTEN_GBPS,
    invalidationTiers: profile.shm.invalidationTiers ?? [...DEFAULT_INVALIDATION_TIERS],
    ...(profile.shm.worstInvalidationTiers === undefined
      ? {}
      : { worstInvalidationTiers: profile.shm.worstInvalidationTiers }),
    ...(profile.shm.worstPeerWrittenGBps === undefined ? {} : { worstFreshReadGBps: profile.shm.worstPeerWrittenGBps }),
    ...oneShotOf(profile),
  };
}

/**
 * The process ranks' protocol over TCP, for this host or for emulated hosts that share its cores
 * (`rankCores`, the cores one host's ranks take turns on). Each end of a message spends a CPU
 * overhead on it (a system call and a turn of the event loop), waiting or not; the measured
 * hand-off is both ends' overhead and the receiver's wake-up. The sender's thread also copies the
 * message into its socket, at the measured stream's pace, before it does anything else: a
 * 2-process direct broadcast's root copies its own output only after its send (16 MiB, warm,
 * three runs: 4377-4986 us out of place, 3128-3475 in place; 64 MiB 15.8-17.0 ms and 11.3-14.1).
 */
export function tcpProtocol(profile: LocalProfile, rankCores: number): TopologyProtocol {
  const overheadUs = profile.tcp.overheadUs ?? DEFAULT_TCP_OVERHEAD_US;
  const wakeUs = Math.max(0, profile.tcp.messageUs - 2 * overheadUs);
  // The measured 2-rank one-shot call is a frame out and one in and a wake-up, which the simulator charges apart.
  const oneShotUs = Math.max(0, (profile.tcp.oneShotUs ?? DEFAULT_TCP_ONE_SHOT_US) - profile.tcp.messageUs);
  // A lone stream over loopback goes at the pace its sender's thread copies it into the socket.
  const sendCopyGBps = tcpStreamGBps(profile);
  return {
    name: 'tcp',
    baseUs: profile.tcp.callUs,
    stepUs: 0,
    netStepUs: 0,
    efficiency: 1,
    wakeUs,
    rankCores,
    overheadUs,
    sendCopyGBps,
    oneShotUs,
  };
}

/**
 * The one-shot path of thread ranks in the protocol's terms. The profile's oneShotUs is a whole
 * 2-rank call, of which the simulator charges the wake-up (messageUs) apart. Its oneShotGBps
 * (fitted so that the simulator reproduces a timed all-reduce through the path) is the rate at
 * which a reader takes a message published by reference, one move that the simulator charges at
 * the copy speed of the smallest working set (the first cache tier) divided by the efficiency. A
 * message copied through a slot (small, or in place) is not read by reference: the simulator
 * prices its two moves at the copy and fresh-read rates instead (sim/one-shot-flows.ts).
 */
function oneShotOf(profile: LocalProfile): { oneShotUs: number; oneShotEfficiency: number } {
  const { oneShotUs, oneShotGBps } = { ...DEFAULT_ONE_SHOT, ...profile.shm };
  const tiers = cacheTiersOf(profile).cacheTiers;
  const smallCopyGBps = profile.shm.copyGBps * (tiers === undefined ? 1 : cacheScale(tiers, 0));
  return {
    oneShotUs: Math.max(0, oneShotUs - profile.shm.messageUs),
    oneShotEfficiency: Math.min(1, oneShotGBps / smallCopyGBps),
  };
}

/**
 * The profile's TCP rates by size as the loopback tiers of the TCP stack and the socket ends:
 * a 2-process sendrecv of `bytes` each way touches 4 x `bytes` (each rank's input and output),
 * and its rate is relative to gbps, the sendrecv of TCP_RATE_BYTES.
 */
function loopbackTiersOf(profile: LocalProfile): { loopbackTiers?: { bytes: number; scale: number }[] } {
  const tiers = profile.tcp.sizeTiers;
  if (tiers === undefined) return {};
  const workingSet = (bytes: number) => 4 * bytes;
  return {
    loopbackTiers: [
      ...tiers.map((t) => ({ bytes: workingSet(t.bytes), scale: t.gbps / profile.tcp.gbps })),
      { bytes: workingSet(TCP_RATE_BYTES), scale: 1 },
    ],
  };
}

/**
 * The profile's copy speeds by working set as the topology's cache tiers: scales relative to
 * the speed at the working set where the profile's rates were measured (one core's copy, the
 * per-rank rate). The hub forwards cores x that rate, so what every core copies at once scales
 * it by the same reference. Fold speeds, where measured, scale the ranks' reductions by theirs.
 */
function cacheTiersOf(profile: LocalProfile): {
  cacheTiers?: { bytes: number; scale: number; sharedScale?: number; reduceScale?: number }[];
} {
  const tiers = profile.memoryTiers;
  if (tiers === undefined) return {};
  const reference = copyAtProfileWorkingSet(tiers);
  const foldReference = foldAtProfileWorkingSet(tiers);
  return {
    cacheTiers: tiers.map((t) => ({
      bytes: t.bytes,
      scale: t.copyGBps / reference,
      ...(t.allCoresGBps === undefined ? {} : { sharedScale: t.allCoresGBps / reference }),
      ...(foldReference === undefined ? {} : { reduceScale: t.foldGBps! / foldReference }),
    })),
  };
}
