import { type Codec, codecFor } from '../compress/codec.js';
import { type CompressionSpec, PIECE_ELEMENTS, compressionLabel } from '../compress/compression-spec.js';
import { type DTypeInfo, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { bfloat16FromFloatBits, bfloat16ToFloat, halfDecodeTable, halfFromFloatBits } from '../dtypes/half.js';
import { executeSchedule } from '../exec/executor.js';
import type { CodecSimd } from '../kernels/codec-simd.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import { type Transport, type WaitContext, opcodeOf } from '../transport/transport.js';
import { type CallPlan, callViews } from './call-plan.js';
import { type LayoutSite, type PieceLayout, type WirePhase, pieceLayout } from './compressed-layout.js';
import type { Workspaces } from './staging.js';

const BYTES = dtypeInfo('uint8');
const FLOAT32 = dtypeInfo('float32');
const OPCODE = opcodeOf('compressed');

/** What a compressed call runs with on its communicator. */
export interface CompressedSite extends LayoutSite {
  readonly workspaces: Workspaces;
  readonly transport: Transport;
  /** Float32 sums, for a host's uncompressed reduce-scatter (the byte phases reduce nothing). */
  readonly sumKernel: ReduceKernel;
  /** The arena's SIMD codec loops (undefined: JavaScript only); they run on arrays in the arena. */
  readonly simd: CodecSimd | undefined;
}

type Compressible = 'allReduce' | 'reduce' | 'reduceScatter' | 'allGather' | 'broadcast';

/** The wire phases a piece goes through, in order. */
type Stage = 'localReduce' | 'exchange' | 'spread' | 'localGather';

interface Piece {
  readonly index: number;
  /** First value of the piece in the message (in each block, for reduceScatter and allGather). */
  readonly offset: number;
  readonly layout: PieceLayout;
}

/** Stage `stage` (an index into the call's stages) of piece `piece`: one step on the wire. */
interface WireStep {
  readonly piece: number;
  readonly stage: number;
}

type Tag = { readonly seq: number; readonly opcode: number; readonly checksum: boolean | undefined };

/**
 * A collective whose data crosses the wire encoded (compress/), with a schedule that quantises
 * each value as few times as the collective allows:
 * - allReduce: an all-to-all of each rank's encoded chunks, so chunk j's owner dequantises every
 *   rank's contribution and accumulates in float32 in rank order; then the owner's sum, encoded
 *   once, is all-gathered and every rank decodes the same bytes (bitwise equal results). With
 *   several ranks on each of several hosts (tuner/compression-hierarchy.ts), a host's ranks
 *   first reduce-scatter their values uncompressed, the ranks holding the same share on every
 *   host run the compressed all-reduce on it, and each host all-gathers the result;
 * - reduceScatter: the all-to-all and the accumulation (each input quantised once, the result not);
 * - reduce: the same, then a gather of the owners' encoded sums to the root;
 * - allGather and broadcast: each block encoded once by its owner, decoded by every rank (the
 *   owner too, so that every rank holds the same values).
 * A large call runs piece by piece: the wire steps go one at a time (one channel, matched in
 * order) in a wavefront, piece s's stage j beside piece s+1's stage j-1, and while one is in
 * flight this rank encodes, reduces or decodes the pieces around it.
 */
export class CompressedCall {
  readonly codec: Codec;
  /** The wire format and the algorithms of the phases, for logs and flight records. */
  readonly algorithms: string;
  /** Encoded bytes of the whole message (what the caller's bytes became). */
  readonly encodedBytes: number;
  readonly plan: CallPlan;
  readonly collective: Compressible;
  readonly on: CompressedSite;
  readonly pieces: readonly Piece[];
  readonly stages: readonly Stage[];
  readonly steps: readonly WireStep[];

  constructor(plan: CallPlan, spec: CompressionSpec, on: CompressedSite) {
    this.plan = plan;
    this.on = on;
    this.collective = plan.collective as Compressible;
    this.codec = codecFor(spec, on.simd);
    const { count, root } = plan.shape;
    const layouts = new Map<number, PieceLayout>();
    const layoutOf = (values: number) => {
      let layout = layouts.get(values);
      if (layout === undefined) {
        layout = pieceLayout(this.collective, values, root, this.codec, on);
        layouts.set(values, layout);
      }
      return layout;
    };
    const pieceCount = Math.max(1, Math.ceil(count / PIECE_ELEMENTS));
    this.pieces = Array.from({ length: pieceCount }, (_, index) => {
      const offset = index * PIECE_ELEMENTS;
      return { index, offset, layout: layoutOf(Math.min(PIECE_ELEMENTS, count - offset)) };
    });
    const first = this.pieces[0].layout;
    this.stages = [
      ...(first.hierarchy ? (['localReduce'] as const) : []),
      ...(first.exchange ? (['exchange'] as const) : []),
      ...(first.spread ? (['spread'] as const) : []),
      ...(first.hierarchy ? (['localGather'] as const) : []),
    ];
    this.steps = wavefront(pieceCount, this.stages.length);
    const perBlock = this.pieces.reduce((a, p) => a + p.layout.encoded.reduce((x, y) => x + y, 0), 0);
    this.encodedBytes = perBlock * (this.collective === 'allGather' ? on.size : 1);
    const phaseOf = (stage: Stage): WirePhase =>
      stage === 'localReduce'
        ? first.hierarchy!.localReduce
        : stage === 'localGather'
          ? first.hierarchy!.localGather
          : stage === 'exchange'
            ? first.exchange!
            : first.spread!;
    const named = this.stages.map((stage) => {
      const { shape, schedule } = phaseOf(stage);
      return `${shape.collective}${stage.startsWith('local') ? ' in the host' : ''} ${schedule.algorithm}`;
    });
    this.algorithms = `${compressionLabel(spec)}: ${named.join(', ')}${pieceCount > 1 ? `, ${pieceCount} pieces` : ''}`;
  }

  async run(seq: number, ctx: WaitContext, checksum: boolean | undefined): Promise<void> {
    const tag: Tag = { seq, opcode: OPCODE, checksum };
    const run = new PipelineRun(
      this,
      callViews(this.plan.shape, this.on.rank, { user: this.plan.input!, output: this.plan.output }),
    );
    const { steps } = this;
    for (let k = 0; k < steps.length; k++) {
      run.prepare(steps[k]);
      const running = run.start(steps[k], tag, ctx);
      // While the step is on the wire: what the next step needs, and results of finished pieces.
      if (k + 1 < steps.length) run.prepareIfReady(steps[k + 1]);
      run.finishReady();
      await running;
      run.completed(steps[k]);
    }
    run.finishAll();
  }
}

/**
 * The order of wire steps: piece s's stage j goes at time s + j, the earlier stage first within
 * a time (so a reduction exchanges piece s+1 before it spreads piece s, and each piece's CPU work
 * runs while the next piece's step is on the wire).
 */
function wavefront(pieces: number, stages: number): WireStep[] {
  const steps: WireStep[] = [];
  for (let time = 0; time < pieces + stages - 1; time++)
    for (let stage = 0; stage < stages; stage++) {
      const piece = time - stage;
      if (piece >= 0 && piece < pieces) steps.push({ piece, stage });
    }
  return steps;
}

/** A slot's buffers: each piece in flight has its own. */
interface Slot {
  readonly send: Uint8Array;
  readonly received: Uint8Array;
  readonly own: Uint8Array;
  readonly gathered: Uint8Array;
  /** Under a hierarchy: the piece as the host reduces it (padded), this rank's share, and the gathered result. */
  readonly localIn: Float32Array | undefined;
  readonly localChunk: Float32Array | undefined;
  readonly localOut: Float32Array | undefined;
}

/**
 * The state of one call's pipeline: for every piece, how many of its wire steps have completed
 * and how many of its CPU tasks have run (task i comes before wire step i; the last after the
 * last one). Pieces in flight at once never outnumber the slots, so each piece's buffers are
 * its slot's.
 */
class PipelineRun {
  private readonly call: CompressedCall;
  private readonly views: { input: TypedArray; output: TypedArray };
  private readonly wireDone: number[];
  private readonly cpuDone: number[];
  private readonly slots: Slot[];
  private readonly scratch: Uint8Array;
  private readonly sum: Float32Array;
  private readonly staged: Float32Array;
  /** Error feedback: what an encoded chunk decodes to, to update the residual. */
  private readonly decodedChunk: Float32Array | undefined;

  constructor(call: CompressedCall, views: { input: TypedArray; output: TypedArray }) {
    this.call = call;
    this.views = views;
    const pieces = call.pieces.length;
    this.wireDone = new Array(pieces).fill(0);
    this.cpuDone = new Array(pieces).fill(0);
    const { workspaces, size } = call.on;
    const first = call.pieces[0].layout;
    const h = first.hierarchy;
    const members = h ? call.on.hierarchy!.cross.length : size;
    const slotCount = Math.min(pieces, call.stages.length + 1);
    const bytes = (name: string, i: number, n: number) =>
      workspaces.get(`compress-${name}${i}`, BYTES, n) as Uint8Array;
    const floats = (name: string, i: number, n: number) =>
      workspaces.get(`compress-${name}${i}`, FLOAT32, n) as Float32Array;
    this.slots = Array.from({ length: slotCount }, (_, i) => ({
      send: bytes(
        'send',
        i,
        first.encoded.reduce((a, b) => a + b, 0),
      ),
      received: bytes('received', i, members * first.widest),
      own: bytes('own', i, first.widest),
      gathered: bytes('gathered', i, members * first.widest),
      localIn: h ? floats('local-in', i, h.localSize * h.block) : undefined,
      localChunk: h ? floats('local-chunk', i, h.block) : undefined,
      localOut: h ? floats('local-out', i, h.localSize * h.block) : undefined,
    }));
    const phases = [first.exchange, first.spread, h?.localReduce, h?.localGather].filter(
      (p): p is WirePhase => p !== undefined,
    );
    const scratchBytes = Math.max(0, ...phases.map((p) => p.schedule.scratchCount * p.elementBytes));
    this.scratch = workspaces.get('compress-scratch', BYTES, scratchBytes + 4) as Uint8Array;
    const ownChunk = Math.max(...first.chunks.map((c) => c.count));
    this.sum = workspaces.get('compress-sum', FLOAT32, ownChunk) as Float32Array;
    const stagedCount = call.collective === 'reduceScatter' ? size * first.count : first.count;
    this.staged = workspaces.get('compress-staged', FLOAT32, stagedCount) as Float32Array;
    this.decodedChunk =
      call.plan.compression?.residual === undefined
        ? undefined
        : (workspaces.get('compress-feedback', FLOAT32, ownChunk) as Float32Array);
  }

  private slotOf(piece: number): Slot {
    return this.slots[piece % this.slots.length];
  }

  /** Runs whatever `step` still needs, now: the CPU tasks of its piece up to it, and the end of the piece whose slot it takes. */
  prepare(step: WireStep): void {
    const previous = step.piece - this.slots.length;
    if (previous >= 0) this.finishPiece(previous);
    while (this.cpuDone[step.piece] <= step.stage) this.cpuTask(step.piece, this.cpuDone[step.piece]++);
  }

  /** Prepares `step` if what it needs has arrived (its piece's earlier wire steps). */
  prepareIfReady(step: WireStep): void {
    const previous = step.piece - this.slots.length;
    if (previous >= 0 && this.wireDone[previous] < this.call.stages.length) return;
    if (this.wireDone[step.piece] < step.stage) return;
    this.prepare(step);
  }

  start(step: WireStep, tag: Tag, ctx: WaitContext): Promise<void> {
    const { layout } = this.call.pieces[step.piece];
    const slot = this.slotOf(step.piece);
    switch (this.call.stages[step.stage]) {
      case 'localReduce':
        return this.runPhase(layout.hierarchy!.localReduce, slot.localIn!, slot.localChunk!, tag, ctx);
      case 'exchange':
        return this.runPhase(layout.exchange!, slot.send, slot.received, tag, ctx);
      case 'spread':
        return this.runPhase(layout.spread!, slot.own, slot.gathered, tag, ctx);
      case 'localGather':
        return this.runPhase(layout.hierarchy!.localGather, slot.localChunk!, slot.localOut!, tag, ctx);
    }
  }

  completed(step: WireStep): void {
    this.wireDone[step.piece]++;
  }

  /** The last CPU task of every piece whose wire steps are all done. */
  finishReady(): void {
    const last = this.call.stages.length;
    for (let s = 0; s < this.call.pieces.length; s++)
      if (this.wireDone[s] === last && this.cpuDone[s] === last) this.cpuTask(s, this.cpuDone[s]++);
  }

  finishAll(): void {
    for (let s = 0; s < this.call.pieces.length; s++) this.finishPiece(s);
  }

  private finishPiece(s: number): void {
    while (this.cpuDone[s] <= this.call.stages.length) this.cpuTask(s, this.cpuDone[s]++);
  }

  /** CPU task `task` of piece s: what goes before its wire step `task`, or after its last one. */
  private cpuTask(s: number, task: number): void {
    const stages = this.call.stages;
    const after = task === 0 ? undefined : stages[task - 1];
    switch (after) {
      case undefined:
        if (stages[0] === 'localReduce') this.stageLocal(s);
        else this.encodePiece(s);
        return;
      case 'localReduce':
        this.encodeLocal(s);
        return;
      case 'exchange':
        this.reducePiece(s);
        return;
      case 'spread':
        if (stages[task] === 'localGather') this.decodeLocal(s);
        else this.decodePiece(s);
        return;
      case 'localGather':
        this.copyOut(s);
        return;
    }
  }

  private get reduces(): boolean {
    const c = this.call.collective;
    return c === 'allReduce' || c === 'reduce' || c === 'reduceScatter';
  }

  /** Encodes piece s's input: every chunk into the send buffer (reductions), or this rank's block (gathers). */
  private encodePiece(s: number): void {
    const { codec, collective, on } = this.call;
    const piece = this.call.pieces[s];
    const slot = this.slotOf(s);
    const { layout } = piece;
    if (!this.reduces) {
      if (collective === 'broadcast' && on.rank !== this.call.plan.shape.root) return;
      codec.encode(this.inputRange(piece.offset, layout.count, 0), slot.own.subarray(0, layout.encoded[0]));
      return;
    }
    const blockStride = this.call.plan.shape.count;
    let at = 0;
    layout.chunks.forEach((chunk, j) => {
      const start = collective === 'reduceScatter' ? j * blockStride + piece.offset : piece.offset + chunk.offset;
      const bytes = slot.send.subarray(at, at + layout.encoded[j]);
      at += layout.encoded[j];
      this.encodeChunk(this.inputRange(start, chunk.count, chunk.offset), start, chunk.offset, bytes);
    });
  }

  /** Encodes one chunk of the input (at `start` in the message), through the residual under error feedback. */
  private encodeChunk(source: Float32Array, start: number, stagedAt: number, bytes: Uint8Array): void {
    const residual = this.call.plan.compression?.residual;
    if (residual === undefined) this.call.codec.encode(source, bytes);
    else this.encodeWithFeedback(source, residual.subarray(start, start + source.length), stagedAt, bytes);
  }

  /**
   * Encodes input + residual, and leaves in the residual what the encoding lost (zero where the
   * sum is not finite, so one Inf does not stay in every later step).
   */
  private encodeWithFeedback(source: Float32Array, residual: Float32Array, stagedAt: number, bytes: Uint8Array): void {
    const { codec } = this.call;
    const corrected = this.staged.subarray(stagedAt, stagedAt + source.length);
    for (let i = 0; i < source.length; i++) corrected[i] = source[i] + residual[i];
    codec.encode(corrected, bytes);
    const decoded = this.decodedChunk!.subarray(0, source.length);
    codec.decode(bytes, decoded);
    for (let i = 0; i < source.length; i++) {
      const lost = corrected[i] - decoded[i];
      residual[i] = Number.isFinite(lost) ? lost : 0;
    }
  }

  /** Accumulates piece s's exchanged chunk from every member in their order; stores it (reduceScatter) or encodes it for the spread. */
  private reducePiece(s: number): void {
    const { codec, collective, plan } = this.call;
    const piece = this.call.pieces[s];
    const slot = this.slotOf(s);
    const { layout } = piece;
    const { index, members } = this.exchangeGroup();
    const mine = layout.encoded[index];
    const sum = this.sum.subarray(0, layout.chunks[index].count);
    sum.fill(0);
    for (let k = 0; k < members; k++) codec.accumulate(slot.received.subarray(k * mine, (k + 1) * mine), sum);
    // Under a hierarchy every rank's values are in the sum: avg divides by all of them.
    if (plan.op === 'avg') for (let i = 0; i < sum.length; i++) sum[i] = sum[i] / this.call.on.size;
    if (collective === 'reduceScatter') {
      storeFloat32(plan.dtype, sum, this.views.output.subarray(piece.offset, piece.offset + sum.length) as TypedArray);
      return;
    }
    codec.encode(sum, slot.own.subarray(0, mine));
  }

  /** This rank's index in the group that exchanges chunks, and the group's size. */
  private exchangeGroup(): { index: number; members: number } {
    const { hierarchy, rank, size } = this.call.on;
    return this.call.stages[0] === 'localReduce' && hierarchy !== undefined
      ? { index: hierarchy.crossIndex, members: hierarchy.cross.length }
      : { index: rank, members: size };
  }

  /** Decodes piece s's spread blocks into the output (on the root only, for reduce). */
  private decodePiece(s: number): void {
    const { codec, collective, on, plan } = this.call;
    if (collective === 'reduce' && on.rank !== plan.shape.root) return;
    const piece = this.call.pieces[s];
    const slot = this.slotOf(s);
    const { layout } = piece;
    const blocks = collective === 'allGather' ? on.size : collective === 'broadcast' ? 1 : layout.chunks.length;
    for (let j = 0; j < blocks; j++) {
      const range =
        collective === 'allGather'
          ? { offset: j * plan.shape.count + piece.offset, count: layout.count }
          : collective === 'broadcast'
            ? { offset: piece.offset, count: layout.count }
            : { offset: piece.offset + layout.chunks[j].offset, count: layout.chunks[j].count };
      const bytes = layout.encoded[collective === 'allGather' || collective === 'broadcast' ? 0 : j];
      const encoded = slot.gathered.subarray(j * layout.widest, j * layout.widest + bytes);
      const target = this.views.output.subarray(range.offset, range.offset + range.count) as TypedArray;
      if (this.direct(target)) codec.decode(encoded, target as Float32Array);
      else {
        const staged = this.staged.subarray(0, range.count);
        codec.decode(encoded, staged);
        storeFloat32(plan.dtype, staged, target);
      }
    }
  }

  /** Hierarchy: piece s's values as float32, padded with zeros to the host's localSize shares. */
  private stageLocal(s: number): void {
    const piece = this.call.pieces[s];
    const localIn = this.slotOf(s).localIn!;
    const { count } = piece.layout;
    loadFloat32(
      this.call.plan.dtype,
      this.views.input.subarray(piece.offset, piece.offset + count) as TypedArray,
      localIn.subarray(0, count),
    );
    localIn.fill(0, count);
  }

  /** Hierarchy: this rank's share of the host's sum, encoded chunk by chunk for the exchange between hosts. */
  private encodeLocal(s: number): void {
    const { layout } = this.call.pieces[s];
    const slot = this.slotOf(s);
    const share = slot.localChunk!;
    let at = 0;
    layout.chunks.forEach((chunk, j) => {
      const bytes = slot.send.subarray(at, at + layout.encoded[j]);
      at += layout.encoded[j];
      this.call.codec.encode(share.subarray(chunk.offset, chunk.offset + chunk.count), bytes);
    });
  }

  /** Hierarchy: the spread sums decoded into this rank's share, which the host then all-gathers. */
  private decodeLocal(s: number): void {
    const { layout } = this.call.pieces[s];
    const slot = this.slotOf(s);
    layout.chunks.forEach((chunk, j) => {
      const encoded = slot.gathered.subarray(j * layout.widest, j * layout.widest + layout.encoded[j]);
      this.call.codec.decode(encoded, slot.localChunk!.subarray(chunk.offset, chunk.offset + chunk.count));
    });
  }

  /** Hierarchy: the host's gathered result, without its padding, into the output. */
  private copyOut(s: number): void {
    const piece = this.call.pieces[s];
    const { count } = piece.layout;
    storeFloat32(
      this.call.plan.dtype,
      this.slotOf(s).localOut!.subarray(0, count),
      this.views.output.subarray(piece.offset, piece.offset + count) as TypedArray,
    );
  }

  /** Whether the codec works on `array` itself: float32 in the arena, where the SIMD loops reach it. */
  private direct(array: TypedArray): boolean {
    const { plan, on } = this.call;
    return plan.dtype.name === 'float32' && (on.simd === undefined || on.simd.contains(array));
  }

  /** count input values from `start` as float32 where the codec reaches them: themselves, or staged at stagedAt. */
  private inputRange(start: number, count: number, stagedAt: number): Float32Array {
    const view = this.views.input.subarray(start, start + count) as TypedArray;
    if (this.direct(view)) return view as Float32Array;
    const staged = this.staged.subarray(stagedAt, stagedAt + count);
    loadFloat32(this.call.plan.dtype, view, staged);
    return staged;
  }

  private runPhase(
    phase: WirePhase,
    input: Uint8Array | Float32Array,
    output: Uint8Array | Float32Array,
    tag: Tag,
    ctx: WaitContext,
  ): Promise<void> {
    const { transport, sumKernel } = this.call.on;
    const floats = phase.elementBytes === 4;
    const scratch = floats
      ? new Float32Array(this.scratch.buffer, this.scratch.byteOffset, this.scratch.byteLength >> 2)
      : this.scratch;
    return executeSchedule({
      schedule: phase.schedule,
      buffers: { input, output, scratch },
      dtype: floats ? FLOAT32 : BYTES,
      kernel: sumKernel,
      transport,
      tag,
      ctx,
      channelBase: 0,
    });
  }
}

/** float32, float16 or bfloat16 values into a float32 array. */
function loadFloat32(dtype: DTypeInfo, input: TypedArray, out: Float32Array): void {
  if (dtype.name === 'float32') {
    out.set(input as Float32Array);
    return;
  }
  const bits = input as Uint16Array;
  if (dtype.name === 'bfloat16') for (let i = 0; i < bits.length; i++) out[i] = bfloat16ToFloat(bits[i]);
  else {
    const table = halfDecodeTable();
    for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
  }
}

/** float32 values stored in a float32, float16 or bfloat16 array (16-bit floats rounded to nearest even). */
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
