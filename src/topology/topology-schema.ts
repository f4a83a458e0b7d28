import { z } from 'zod';
import { invalidArgument } from '../errors.js';
import { LINK_KIND_IDS, type LinkKindId, SWITCH_KIND_IDS, type SwitchKindId } from './catalog.js';

/**
 * The topology file format: devices and the links between them, in one JSON document. The
 * presets produce the same data, so a preset printed with `tsccl topo show --format json` is a
 * valid file to edit. `tsccl topo schema` prints the JSON Schema generated from this one zod
 * schema; the TypeScript types are inferred from it too.
 */
export const DEVICE_KINDS = ['gpu', 'npu', 'core', 'cpu', 'nic', 'switch'] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];

/** Device kinds that are ranks: accelerators, and CPU cores running tsccl's own thread or process ranks. */
export const RANK_KINDS: ReadonlySet<DeviceKind> = new Set(['gpu', 'npu', 'core']);

const deviceSchema = z
  .object({
    id: z.string().min(1).describe('unique name, e.g. "n0.gpu3"'),
    kind: z
      .enum(DEVICE_KINDS)
      .describe('gpu, npu and core (a CPU core running a rank) are ranks; cpu, nic and switch forward traffic'),
    host: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('server (scale-up domain) the device belongs to, 0-based; absent for fabric switches'),
    switchKind: z
      .enum(SWITCH_KIND_IDS as [SwitchKindId, ...SwitchKindId[]])
      .optional()
      .describe('for kind "switch": which switch chip (latency, in-switch reduction)'),
    nic: z.string().optional().describe('for an accelerator: the NIC its traffic to other hosts leaves by'),
    bf16Tflops: z
      .number()
      .positive()
      .optional()
      .describe(
        "for an accelerator: dense BF16 peak in TFLOPS (the vendor datasheet), from which `tsccl sim train` times a step's compute",
      ),
    memoryGBps: z
      .number()
      .positive()
      .optional()
      .describe(
        'for an accelerator or cpu: local memory bandwidth for copies and reductions (bytes read plus written); for a core: what one core copies, bytes written per second',
      ),
    forwardGBps: z
      .number()
      .positive()
      .optional()
      .describe(
        'for a forwarding device: total GB/s it can pass, shared by all traffic through it (a CPU whose cores move the data); absent = unlimited',
      ),
    stagingGBps: z
      .number()
      .positive()
      .optional()
      .describe(
        'for a cpu of a topology whose peerToPeer is false: GB/s of messages staged in its memory, each written there and read back, shared by all of them; absent: half its memoryGBps (absent too: unlimited)',
      ),
    reduceGBps: z
      .number()
      .positive()
      .optional()
      .describe(
        'for a rank whose reductions are not fused into the transfer (a CPU core): bytes reduced per second, GB/s',
      ),
    cacheTiers: z
      .array(
        z
          .object({
            bytes: z.number().positive().describe('working set: the bytes of all buffers a call touches on this host'),
            scale: z.number().positive().describe('speed at that working set, as a multiple of the stated rates'),
            sharedScale: z
              .number()
              .positive()
              .optional()
              .describe(
                'what the host forwards at that working set while all its cores copy at once, as a multiple of its stated forwarding rate (absent: `scale`)',
              ),
            reduceScale: z
              .number()
              .positive()
              .optional()
              .describe(
                'how fast a core reduces at that working set, as a multiple of its reduceGBps (absent: `scale`)',
              ),
          })
          .strict(),
      )
      .min(1)
      .optional()
      .describe(
        "for a cpu: how the memory speed of its host depends on the working set of a call (caches): the host's memory links and copies run at `scale` x their stated rates, its reductions at `reduceScale` x and its forwarding at `sharedScale` x, interpolated in log(bytes) between tiers and held beyond the ends; where every tier has a reduceScale, a rank folding a message it pulls loads its copy path by the ratio of the two speeds, and by 1.5 (two reads and a write against a read and a write) elsewhere; absent = one speed",
      ),
    loopbackTiers: z
      .array(
        z
          .object({
            bytes: z.number().positive().describe('working set: the bytes of all buffers a call touches on this host'),
            scale: z.number().positive().describe('speed at that working set, as a multiple of the stated rates'),
          })
          .strict(),
      )
      .min(1)
      .optional()
      .describe(
        "for a host's TCP/IP stack or a process's socket end (loopback): how fast it moves by the working set of a call on its host (what fits the socket buffers and caches moves faster): its forwarding and the links that end at it run at `scale` x their stated rates, interpolated in log(bytes) between tiers and held beyond the ends; absent = one speed",
      ),
    label: z.string().optional(),
  })
  .strict();

const linkSchema = z
  .object({
    a: z.string().min(1).describe('device id of one end'),
    b: z.string().min(1).describe('device id of the other end'),
    kind: z
      .enum(LINK_KIND_IDS as [LinkKindId, ...LinkKindId[]])
      .describe('catalog entry: bandwidth, latency, efficiency'),
    count: z.number().int().min(1).default(1).describe('parallel links bundled between a and b'),
    gbps: z.number().positive().optional().describe('override: raw GB/s per link per direction'),
    efficiency: z.number().gt(0).max(1).optional().describe('override: sustained fraction of the raw rate'),
    latencyUs: z.number().min(0).optional().describe('override: one traversal in microseconds'),
  })
  .strict();

/** Extra ns per byte of overwriting what a peer core read, by the bytes each core touches: a protocol's, and a `tsccl tune` profile's. */
export const invalidationTiersSchema = z
  .array(z.object({ bytes: z.number().positive(), nsPerByte: z.number().min(0) }).strict())
  .min(1);
export type InvalidationTiers = z.infer<typeof invalidationTiersSchema>;

const protocolSchema = z
  .object({
    name: z.string().min(1),
    baseUs: z.number().min(0).describe('fixed cost of a call'),
    stepUs: z.number().min(0).describe('per message, on top of the route latency'),
    netStepUs: z.number().min(0).describe('extra per message that crosses a network link'),
    efficiency: z.number().gt(0).max(1).describe('fraction of link bandwidth that carries payload'),
    wakeUs: z
      .number()
      .min(0)
      .optional()
      .describe(
        "CPU ranks: time a rank that waited for a message spends being woken for it, on one of the cores its host's ranks share",
      ),
    overheadUs: z
      .number()
      .min(0)
      .optional()
      .describe(
        "CPU ranks: time each end spends on a message (the sender before it moves, the receiver when it takes it), on a core its host's ranks share",
      ),
    sendCopyGBps: z
      .number()
      .positive()
      .optional()
      .describe(
        "CPU ranks that push through the kernel (TCP): GB/s at which the sender's thread copies a message into its socket, doing nothing else meanwhile",
      ),
    pull: z
      .boolean()
      .optional()
      .describe(
        "CPU ranks that share memory: the receiver copies each message out of the sender's memory on its own core, so a message moves once the receiver takes it",
      ),
    freshReadGBps: z
      .number()
      .positive()
      .optional()
      .describe(
        "CPU ranks that pull: GB/s at which a core copies a message its sender wrote earlier in the same call (fetched from the writer's cache)",
      ),
    invalidationTiers: invalidationTiersSchema
      .optional()
      .describe(
        "CPU ranks that pull: ns per byte a core spends, on top of the write, overwriting data a peer core read since it last wrote it (taking the lines back from that core's cache), by the bytes each core touches in a call (interpolated in log(bytes), held beyond the ends): the more it touches, the less of what it read stays in its cache",
      ),
    worstInvalidationTiers: invalidationTiersSchema
      .optional()
      .describe(
        'CPU ranks that pull: invalidationTiers in the costliest state the machine was measured in (a VM whose vCPUs move between physical cores costs this at times); the simulator predicts with invalidationTiers, and the tuner picks the algorithm that loses least to the fastest in either state',
      ),
    worstFreshReadGBps: z
      .number()
      .positive()
      .optional()
      .describe('CPU ranks that pull: freshReadGBps in the state of worstInvalidationTiers (absent: freshReadGBps)'),
    releaseUs: z
      .number()
      .min(0)
      .optional()
      .describe(
        'CPU ranks that pull, each with a core: us a sender that finished its part spends until it sees its last message taken (absent: wakeUs)',
      ),
    wakeWorkUs: z
      .number()
      .min(0)
      .optional()
      .describe(
        "CPU ranks that outnumber the cores: the part of wakeUs that takes a core; the rest is latency that other ranks' work on the cores hides (absent: all of wakeUs)",
      ),
    rankCores: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'CPU ranks: cores the ranks of one host share; their wake-ups, reductions and copies wait for a free one',
      ),
    oneShotUs: z
      .number()
      .min(0)
      .optional()
      .describe(
        'CPU ranks with a one-shot path (slots every rank publishes into and reads from): its fixed cost of a call, instead of baseUs',
      ),
    oneShotEfficiency: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe(
        'CPU ranks with a one-shot path: fraction of the copy speed a reader takes a message at, instead of efficiency',
      ),
  })
  .strict();

export const topologySchema = z
  .object({
    name: z.string().min(1),
    description: z.string().optional(),
    devices: z.array(deviceSchema).min(1),
    links: z.array(linkSchema),
    protocols: z
      .array(protocolSchema)
      .min(1)
      .optional()
      .describe('how the ranks move messages; absent means the GPU protocols LL, LL128 and Simple'),
    peerToPeer: z
      .boolean()
      .optional()
      .describe(
        "false: accelerators of one host cannot reach each other's memory (consumer GPUs, or NCCL_P2P_DISABLE=1), so every message between two of them is staged in the memory of the CPU nearest its receiver, over PCIe both ways; absent or true: they exchange directly (GPUDirect P2P over PCIe, NVLink, xGMI)",
      ),
    gpuDirectRdma: z
      .enum(['auto', 'on', 'off'])
      .optional()
      .describe(
        "whether a NIC reads and writes accelerator memory directly (GPUDirect RDMA) for traffic between hosts: 'off' stages every message in the host memory of the CPU nearest the accelerator, at both ends, over PCIe both ways; 'on' never stages; 'auto' or absent follows NCCL's default (NCCL_NET_GDR_LEVEL=PXB): direct where the way from an accelerator to its NIC crosses PCIe switches only or a C2C link to a CPU, staged where it crosses a CPU's PCIe root",
      ),
    libraryChannels: z
      .number()
      .int()
      .min(1)
      .max(64)
      .optional()
      .describe(
        "the channels the library sets up for rings and trees on this machine (what NCCL prints at init as coll channels): `tsccl sim` reports how many of them a call runs on by the library's size rule; absent: the distinct ring orders the model runs",
      ),
    library: z
      .enum(['nccl', 'rccl'])
      .optional()
      .describe(
        "the collective library the accelerators run (NVIDIA NCCL, AMD RCCL): tsccl sim chooses among the algorithms it runs unless --algo names another; absent: among all of tsccl's",
      ),
  })
  .strict()
  .superRefine((topo, ctx) => {
    const ids = new Map<string, z.infer<typeof deviceSchema>>();
    topo.devices.forEach((d, i) => {
      if (ids.has(d.id))
        ctx.addIssue({ code: 'custom', path: ['devices', i, 'id'], message: `duplicate device id '${d.id}'` });
      ids.set(d.id, d);
      if (d.kind === 'switch' && d.switchKind === undefined)
        ctx.addIssue({ code: 'custom', path: ['devices', i, 'switchKind'], message: 'a switch needs a switchKind' });
      if (d.stagingGBps !== undefined && d.kind !== 'cpu')
        ctx.addIssue({
          code: 'custom',
          path: ['devices', i, 'stagingGBps'],
          message: 'only a cpu stages messages in its memory',
        });
    });
    topo.devices.forEach((d, i) => {
      if (d.nic !== undefined && ids.get(d.nic)?.kind !== 'nic')
        ctx.addIssue({ code: 'custom', path: ['devices', i, 'nic'], message: `'${d.nic}' is not a nic device` });
    });
    topo.links.forEach((l, i) => {
      for (const end of ['a', 'b'] as const) {
        if (!ids.has(l[end]))
          ctx.addIssue({ code: 'custom', path: ['links', i, end], message: `unknown device '${l[end]}'` });
      }
      if (l.a === l.b)
        ctx.addIssue({ code: 'custom', path: ['links', i, 'b'], message: 'a link must join two different devices' });
    });
    topo.devices.forEach((d, i) => {
      if (RANK_KINDS.has(d.kind) && d.host === undefined)
        ctx.addIssue({ code: 'custom', path: ['devices', i, 'host'], message: 'a rank device needs a host' });
    });
    if (!topo.devices.some((d) => RANK_KINDS.has(d.kind))) {
      ctx.addIssue({ code: 'custom', path: ['devices'], message: 'a topology needs at least one gpu, npu or core' });
    }
  });

export type Topology = z.output<typeof topologySchema>;
export type TopologyInput = z.input<typeof topologySchema>;
export type Device = Topology['devices'][number];
export type Link = Topology['links'][number];
export type TopologyProtocol = NonNullable<Topology['protocols']>[number];

/** Validates a parsed document; errors name the JSON path and the problem, one per line. */
export function parseTopology(doc: unknown, source: string): Topology {
  const result = topologySchema.safeParse(doc);
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 20).map((issue) => `  ${formatPath(issue.path)}: ${issue.message}`);
  throw invalidArgument(`Topology ${source} is not valid:\n${problems.join('\n')}`, { argument: 'topology' });
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0
    ? '(document)'
    : path
        .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
        .join('')
        .replace(/^\./, '');
}

/** The JSON Schema of the topology file format (draft 2020-12). */
export function topologyJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://tsccl.dev/schemas/topology.schema.json',
    title: 'tsccl topology',
    ...z.toJSONSchema(topologySchema, { io: 'input' }),
  };
}
