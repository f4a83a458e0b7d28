import { buildSchedule } from '../algorithms/registry.js';
import { type CallShape, type Range, type Schedule, bufferCounts, splitEven } from '../algorithms/schedule.js';
import { type Codec, codecFor } from '../compress/codec.js';
import { type CompressionSpec, compressionLabel } from '../compress/compression-spec.js';
import { type DTypeInfo, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { bfloat16FromFloatBits, bfloat16ToFloat, halfDecodeTable, halfFromFloatBits } from '../dtypes/half.js';
import { executeSchedule } from '../exec/executor.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import { type Transport, type WaitContext, opcodeOf } from '../transport/transport.js';
import { selectForCall } from '../tuner/predict.js';
import { type CallPlan, callViews } from './call-plan.js';
import type { SelectionSite } from './prepared-call.js';
import type { Workspaces } from './staging.js';

const BYTES = dtypeInfo('uint8');
const FLOAT32 = dtypeInfo('float32');
const OPCODE = opcodeOf('compressed');

/** What a compressed call runs with on its communicator. */
export interface CompressedSite {
  readonly rank: number;
  readonly size: number;
  readonly hosts: readonly number[] | undefined;
  readonly workspaces: Workspaces;
  readonly transport: Transport;
  readonly site: SelectionSite;
  /** The byte phases reduce nothing; the executor still takes a kernel. */
  readonly kernel: ReduceKernel;
}

interface Phase {
  readonly schedule: Schedule;
  readonly shape: CallShape;
}

/**
 * A collective whose data crosses the wire encoded (compress/), with a schedule that quantises
 * each element as few times as the collective allows:
 * - allReduce: an all-to-all of each rank's encoded chunks, so chunk j's owner dequantises every
 *   rank's contribution and accumulates in float32 in rank order; then the owner's sum, encoded
 *   once, is all-gathered and every rank decodes the same bytes (bitwise equal results);
 * - reduceScatter: the all-to-all and the accumulation (each input quantised once, the result not);
 * - reduce: the same, then a gather of the owners' encoded sums to the root;
 * - allGather and broadcast: each block encoded once by its owner, decoded by every rank (the
 *   owner too, so that every rank holds the same values).
 */
export class CompressedCall {
  readonly codec: Codec;
  /** The algorithms of the byte phases, for logs and flight records. */
  readonly algorithms: string;
  /** Encoded bytes of the whole message (what the caller's bytes became). */
  readonly encodedBytes: number;
  private readonly plan: CallPlan;
  private readonly on: CompressedSite;
  /** Elements each rank owns (reductions) or the one block (allGather, broadcast). */
  private readonly chunks: readonly Range[];
  private readonly encoded: readonly number[];
  private readonly widest: number;
  private readonly phases: readonly Phase[];

  constructor(plan: CallPlan, spec: CompressionSpec, on: CompressedSite) {
    this.plan = plan;
    this.on = on;
    this.codec = codecFor(spec);
    const { shape } = plan;
    const { size } = on;
    const c = shape.count;
    this.chunks =
      shape.collective === 'reduceScatter'
        ? Array.from({ length: size }, (_, j) => ({ offset: j * c, count: c }))
        : shape.collective === 'allReduce' || shape.collective === 'reduce'
          ? splitEven(c, size)
          : [{ offset: 0, count: c }];
    this.encoded = this.chunks.map((chunk) => this.codec.encodedBytes(chunk.count));
    this.widest = Math.max(...this.encoded);
    this.phases = this.buildPhases();
    this.encodedBytes = this.encoded.reduce((a, b) => a + b, 0) * (shape.collective === 'allGather' ? size : 1);
    this.algorithms = `${compressionLabel(spec)}: ${this.phases.map((p) => `${p.shape.collective} ${p.schedule.algorithm}`).join(', ')}`;
  }

  private buildPhases(): Phase[] {
    const { shape } = this.plan;
    const { size, rank, hosts } = this.on;
    const base = { nranks: size, root: shape.root, inPlace: false, chunkCount: 0, ...(hosts ? { hosts } : {}) };
    const exchange = (): CallShape => {
      const displs = (counts: readonly number[]) => counts.map((_, i) => counts.slice(0, i).reduce((a, b) => a + b, 0));
      const recvCounts = Array.from({ length: size }, () => this.encoded[rank]);
      return {
        ...base,
        collective: 'allToAll',
        count: 0,
        sendCounts: this.encoded,
        sendDispls: displs(this.encoded),
        recvCounts,
        recvDispls: displs(recvCounts),
      };
    };
    switch (shape.collective) {
      case 'allReduce':
        return [this.phase(exchange()), this.phase({ ...base, collective: 'allGather', count: this.widest })];
      case 'reduce':
        return [this.phase(exchange()), this.phase({ ...base, collective: 'gather', count: this.widest })];
      case 'reduceScatter':
        return [this.phase(exchange())];
      case 'allGather':
        return [this.phase({ ...base, collective: 'allGather', count: this.widest })];
      case 'broadcast':
        return [this.phase({ ...base, collective: 'broadcast', count: this.widest })];
      default:
        throw new Error(`CompressedCall: ${shape.collective} has no compressed schedule`);
    }
  }

  /** The tuner's algorithm for a byte phase (the same on every rank: its sizes are). */
  private phase(shape: CallShape): Phase {
    const selection = selectForCall({
      ...this.on.site,
      oneShotCapacity: undefined,
      shape,
      bytes: bufferCounts(shape, shape.root).input,
      elementBytes: 1,
    });
    const chunked = { ...shape, chunkCount: selection.chunkCount };
    return { shape: chunked, schedule: buildSchedule(chunked, this.on.rank, selection.algorithm) };
  }

  async run(seq: number, ctx: WaitContext, checksum: boolean | undefined): Promise<void> {
    const { shape } = this.plan;
    const views = callViews(shape, this.on.rank, { user: this.plan.input!, output: this.plan.output });
    const { collective } = shape;
    const tag = { seq, opcode: OPCODE, checksum };
    if (collective === 'allReduce' || collective === 'reduce' || collective === 'reduceScatter') {
      const sum = await this.reduceOwnChunk(this.asFloat32(views.input, 'compress-in32'), tag, ctx);
      if (collective === 'reduceScatter') {
        this.store(sum, views.output);
        return;
      }
      const own = this.on.workspaces.get('compress-own', BYTES, this.widest) as Uint8Array;
      this.codec.encode(sum, own.subarray(0, this.encoded[this.on.rank]));
      const gathered = await this.runPhase(this.phases[1], own, this.on.size * this.widest, tag, ctx);
      if (collective === 'reduce' && this.on.rank !== shape.root) return;
      this.decodeBlocks(gathered, views.output, this.chunks);
      return;
    }
    const own = this.on.workspaces.get('compress-own', BYTES, this.widest) as Uint8Array;
    const isSource = collective === 'allGather' || this.on.rank === shape.root;
    if (isSource) this.codec.encode(this.asFloat32(views.input, 'compress-in32'), own.subarray(0, this.encoded[0]));
    const blocks = collective === 'allGather' ? this.on.size : 1;
    const received = await this.runPhase(this.phases[0], own, blocks * this.widest, tag, ctx);
    const count = shape.count;
    this.decodeBlocks(
      received,
      views.output,
      Array.from({ length: blocks }, (_, j) => ({ offset: j * count, count })),
    );
  }

  /** The all-to-all of encoded chunks, and this rank's chunk accumulated from every rank in rank order (avg divided here). */
  private async reduceOwnChunk(input: Float32Array, tag: Tag, ctx: WaitContext): Promise<Float32Array> {
    const { rank, size, workspaces } = this.on;
    const total = this.encoded.reduce((a, b) => a + b, 0);
    const send = workspaces.get('compress-send', BYTES, total) as Uint8Array;
    let at = 0;
    this.chunks.forEach((chunk, j) => {
      this.codec.encode(
        input.subarray(chunk.offset, chunk.offset + chunk.count),
        send.subarray(at, at + this.encoded[j]),
      );
      at += this.encoded[j];
    });
    const mine = this.encoded[rank];
    const received = await this.runPhase(this.phases[0], send, size * mine, tag, ctx);
    const sum = workspaces.get('compress-sum', FLOAT32, this.chunks[rank].count) as Float32Array;
    sum.fill(0);
    for (let k = 0; k < size; k++) this.codec.accumulate(received.subarray(k * mine, (k + 1) * mine), sum);
    if (this.plan.op === 'avg') for (let i = 0; i < sum.length; i++) sum[i] = sum[i] / size;
    return sum;
  }

  private async runPhase(
    phase: Phase,
    input: Uint8Array,
    outputBytes: number,
    tag: Tag,
    ctx: WaitContext,
  ): Promise<Uint8Array> {
    const { workspaces, transport, kernel } = this.on;
    const output = workspaces.get('compress-recv', BYTES, outputBytes) as Uint8Array;
    const scratch = workspaces.get('compress-scratch', BYTES, phase.schedule.scratchCount);
    await executeSchedule({
      schedule: phase.schedule,
      buffers: { input, output, scratch },
      dtype: BYTES,
      kernel,
      transport,
      tag,
      ctx,
      channelBase: 0,
    });
    return output;
  }

  /** Block j of `encoded` (at j * widest) decoded into output[ranges[j]]. */
  private decodeBlocks(encoded: Uint8Array, output: TypedArray, ranges: readonly Range[]): void {
    const total = ranges.reduce((a, r) => Math.max(a, r.offset + r.count), 0);
    const out =
      this.plan.dtype.name === 'float32'
        ? (output as Float32Array)
        : (this.on.workspaces.get('compress-out32', FLOAT32, total) as Float32Array);
    ranges.forEach((range, j) => {
      const bytes = this.codec.encodedBytes(range.count);
      this.codec.decode(
        encoded.subarray(j * this.widest, j * this.widest + bytes),
        out.subarray(range.offset, range.offset + range.count),
      );
    });
    if (out !== output) this.store(out.subarray(0, total), output);
  }

  /** `values` into `output` in the call's dtype (float16 and bfloat16 rounded to nearest even). */
  private store(values: Float32Array, output: TypedArray): void {
    storeFloat32(this.plan.dtype, values, output);
  }

  /** The call's input as float32: itself, or decoded from 16-bit floats into a workspace. */
  private asFloat32(input: TypedArray, slot: string): Float32Array {
    const { dtype } = this.plan;
    if (dtype.name === 'float32') return input as Float32Array;
    const out = this.on.workspaces.get(slot, FLOAT32, input.length) as Float32Array;
    const bits = input as Uint16Array;
    if (dtype.name === 'bfloat16') for (let i = 0; i < bits.length; i++) out[i] = bfloat16ToFloat(bits[i]);
    else {
      const table = halfDecodeTable();
      for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
    }
    return out;
  }
}

type Tag = { readonly seq: number; readonly opcode: number; readonly checksum: boolean | undefined };

/** float32 values stored in a float32, float16 or bfloat16 array. */
export function storeFloat32(dtype: DTypeInfo, values: Float32Array, output: TypedArray): void {
  if (dtype.name === 'float32') {
    (output as Float32Array).set(values);
    return;
  }
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = output as Uint16Array;
  const encode = dtype.name === 'bfloat16' ? bfloat16FromFloatBits : halfFromFloatBits;
  for (let i = 0; i < values.length; i++) out[i] = encode(bits[i]);
}
