import { invalidArgument } from '../errors.js';
import type { InvalidationTiers, Topology } from '../topology/topology-schema.js';

/**
 * Wire protocols of GPU collective libraries, as the simulator charges them. NCCL (and RCCL,
 * HCCL in their own words) moves data with one of three: LL (8-byte stores, half of them
 * flags: lowest latency, half the bandwidth), LL128 (128-byte lines with one flag word) and
 * Simple (bulk copies and a memory fence per step: full bandwidth, the most latency). For each
 * call the simulator, like NCCL's tuner, uses the protocol predicted fastest.
 *
 * Figures: baseUs and efficiency are NCCL's own (src/graph/tuning.cc, quoted in
 * ../shared/reference/hardware.md). stepUs is the synchronisation a step costs on top of the
 * route's latency: for LL128 and Simple it was fitted to [C1] at 1 MB and 16 MB. netStepUs is the extra cost of
 * a step that crosses the network, where a CPU proxy thread posts the RDMA and polls for its
 * completion; these are NCCL's per-hop network figures (2.7 / 4.0 / 14.0 us), on top of the
 * catalog's NIC and switch latencies; [C7] (2 x 8 A100, 8 B, 93.1 us) checks them. LL's 0.5 us per step is fitted to [C6] on top of the 0.5 us
 * NVLink traversal.
 */
export interface Protocol {
  readonly name: string;
  /** Fixed cost of a call: kernel launch and setup. */
  readonly baseUs: number;
  /** Per step (message) synchronisation between two GPUs. */
  readonly stepUs: number;
  /** Extra per step when the message crosses the network (proxy thread). */
  readonly netStepUs: number;
  /** Fraction of link bandwidth that carries payload. */
  readonly efficiency: number;
  /**
   * Ranks that are CPU threads: time a rank that had to wait for a message spends being woken
   * for it (a futex wake and a trip through the scheduler; with more ranks than cores, a core
   * must come free first). A message already there costs no wake-up, which is why reading from
   * many peers at once is cheaper than a chain of hand-offs. GPU protocols have none: their
   * thread blocks spin on flags.
   */
  readonly wakeUs?: number;
  /**
   * CPU ranks that pull, each with a core: what a sender that finished its part spends until it
   * sees that its last message was taken (it spins on a flag, so this is less than a wake-up).
   * Absent: wakeUs. Ranks that outnumber the cores sleep, and are woken (wakeUs).
   */
  readonly releaseUs?: number;
  /**
   * CPU ranks that outnumber the cores: the part of wakeUs that takes a core (the woken rank's
   * switch in); the rest is latency, which the other ranks' work on the cores hides, as it does
   * in a call that moves data. Absent: all of wakeUs.
   */
  readonly wakeWorkUs?: number;
  /**
   * CPU ranks: time the CPU spends on each message at each end (LogP's overhead "o": Culler et
   * al., 1993): the sender builds and writes it before it moves, the receiver reads and parses it
   * when it takes it, each on a core of its host. Over TCP this is a system call and a trip
   * through the event loop per message, which is what makes many small messages dear even when
   * nobody waits; shared memory hands a message over with a flag, and has none.
   */
  readonly overheadUs?: number;
  /**
   * CPU ranks that push through the kernel (TCP): how fast the sender's thread copies a message
   * into its socket, GB/s. The thread does nothing else meanwhile, so the rank's own copies,
   * reductions and further sends wait for it. Over loopback this is the pace of a lone stream;
   * over a slower wire the copy ends long before the wire drains. Absent: a send costs its
   * sender overheadUs alone.
   */
  readonly sendCopyGBps?: number;
  /**
   * CPU ranks that share memory: the receiver copies (or reduces) each message straight out of
   * the sender's memory on its own core (transport/shm). So a message moves only once its
   * receiver takes it, the receiver is busy until it has, and the sender's core and link take no
   * part; a rank's local copies load the same memory paths. Absent: messages move as soon as
   * they are sent (a network, a GPU's copy engines, the kernel's socket buffers).
   */
  readonly pull?: boolean;
  /**
   * CPU ranks that pull: how fast a core copies a message its sender wrote earlier in the same
   * call (a reduced or forwarded piece), GB/s. Those lines sit modified in the writer's cache,
   * and each is fetched from there, a cache-to-cache transfer slower than a read from the shared
   * cache or memory; data written before the call (the input) has long been written back.
   * Absent: such a message moves like any other.
   */
  readonly freshReadGBps?: number;
  /**
   * CPU ranks that pull: what a core spends, on top of the write, to overwrite data a peer's
   * core read since this one last wrote it. The peer's cache holds those lines, and the writer
   * must take each back (an invalidation) before it can write it; a fresh piece's sender pays it
   * in every call of a run, as its receiver read the piece in the call before. In ns per byte,
   * by the bytes each core touches in a call: the more a core touches, the less of what it read
   * stays in its cache to be taken back. Absent: writes cost the same wherever their lines are.
   */
  readonly invalidationTiers?: Readonly<InvalidationTiers>;
  /**
   * invalidationTiers in the costliest state the machine was measured in: the simulator predicts
   * with invalidationTiers; the tuner weighs both (tuner/machine-states.ts). Absent: one state.
   */
  readonly worstInvalidationTiers?: Readonly<InvalidationTiers>;
  /** CPU ranks: the cores the ranks of one host share (absent: each rank has a core of its own). */
  readonly rankCores?: number;
  /**
   * CPU ranks with a one-shot path (exec/one-shot.ts: every rank publishes its message, by
   * reference or copied into a slot, and reads its peers'): the fixed cost of such a call and the
   * fraction of the copy speed a reader takes a message at. Measured apart from the schedules'
   * figures, because the path is another piece of code: synchronous, with no executor.
   */
  readonly oneShotUs?: number;
  readonly oneShotEfficiency?: number;
}

export const PROTOCOL_NAMES = ['LL', 'LL128', 'Simple'] as const;
export type ProtocolName = (typeof PROTOCOL_NAMES)[number];

export const PROTOCOLS: Readonly<Record<ProtocolName, Protocol>> = {
  LL: { name: 'LL', baseUs: 6.6, stepUs: 0.5, netStepUs: 2.7, efficiency: 0.5 },
  LL128: { name: 'LL128', baseUs: 14, stepUs: 1.2, netStepUs: 4, efficiency: 0.92 },
  Simple: { name: 'Simple', baseUs: 8.4, stepUs: 9, netStepUs: 14, efficiency: 1 },
};

/**
 * RCCL's wire protocols: NCCL's, with RCCL's own fixed cost for LL and LL128, 12 us each against
 * NCCL's 6.6 and 14 (baseLat in ROCm/rccl src/graph/tuning.cc, the same in RCCL 2.21.5 and in
 * ROCm/rocm-systems): a HIP launch and RCCL's setup cost more than CUDA's and NCCL's, which is
 * what an MI300X's small calls measure (docs/SIMULATOR.md, "Small calls across vendors"). RCCL's
 * Simple figure, 17 us, is not taken: C4's 1 MB call took 27.4 us in all, which 17 us of fixed
 * cost would leave 10 us to move the data in, so Simple keeps the cost C4 fits.
 */
export const RCCL_PROTOCOLS: Readonly<Record<ProtocolName, Protocol>> = {
  ...PROTOCOLS,
  LL: { ...PROTOCOLS.LL, baseUs: 12 },
  LL128: { ...PROTOCOLS.LL128, baseUs: 12 },
};

/** Parses a --proto value (NCCL_PROTO style, comma separated) against a topology's protocols; absent means all. */
export function protocolsFrom(text: string | undefined, topology: Topology): string[] {
  const names = Object.keys(topologyProtocols(topology));
  if (text === undefined || text === '') return names;
  return text.split(',').map((part) => {
    const name = names.find((p) => p.toLowerCase() === part.trim().toLowerCase());
    if (name === undefined)
      throw invalidArgument(`--proto '${part}' is not a protocol: expected ${names.join(', ')}`, {
        argument: '--proto',
      });
    return name;
  });
}

/**
 * The protocols a topology's ranks use: the file's own (a CPU machine's measured profile, an
 * emulated cluster) or, for accelerators, their library's three (NCCL's unless it is RCCL).
 */
export function topologyProtocols(topology: Topology): Readonly<Record<string, Protocol>> {
  if (topology.protocols === undefined) return topology.library === 'rccl' ? RCCL_PROTOCOLS : PROTOCOLS;
  return Object.fromEntries(topology.protocols.map((p) => [p.name, p]));
}

/** The protocol a call names, from the topology's table; a clear error when it has none by that name. */
export function protocolOf(topology: Topology, name: string): Protocol {
  const protocol = topologyProtocols(topology)[name];
  if (protocol === undefined) {
    throw invalidArgument(
      `Protocol '${name}' is not one of ${Object.keys(topologyProtocols(topology)).join(', ')} for topology ${topology.name}`,
      { argument: '--proto' },
    );
  }
  return protocol;
}
