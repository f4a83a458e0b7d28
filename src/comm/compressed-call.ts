import { type Codec, codecFor } from '../compress/codec.js';
import { type CompressionSpec, compressionLabel } from '../compress/compression-spec.js';
import { type DTypeInfo, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { bfloat16FromFloatBits, bfloat16ToFloat, halfDecodeTable, halfFromFloatBits } from '../dtypes/half.js';
import { paramInt } from '../config/params.js';
import { executeSchedule } from '../exec/executor.js';
import type { CodecSimd } from '../kernels/codec-simd.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import { type Transport, type WaitContext, opcodeOf } from '../transport/transport.js';
import { type CallPlan, callViews } from './call-plan.js';
import { type BytePhase, type LayoutSite, type PieceLayout, pieceLayout } from './compressed-layout.js';
import type { Workspaces } from './staging.js';

const BYTES = dtypeInfo('uint8');
const FLOAT32 = dtypeInfo('float32');
const OPCODE = opcodeOf('compressed');
/**
 * Elements per piece (TSCCL_COMPRESSION_PIECE): a large call runs as a pipeline of pieces, so that
 * encoding the next piece and reducing or decoding the last run while a piece is on the wire.
 */
const PIECE_ELEMENTS = paramInt('TSCCL_COMPRESSION_PIECE', process.env, 1);

/** What a compressed call runs with on its communicator. */
export interface CompressedSite extends LayoutSite {
  readonly workspaces: Workspaces;
  readonly transport: Transport;
  /** The byte phases reduce nothing; the executor still takes a kernel. */
  readonly kernel: ReduceKernel;
  /** The arena's SIMD codec loops (undefined: JavaScript only); they run on arrays in the arena. */
  readonly simd: CodecSimd | undefined;
}

type Compressible = 'allReduce' | 'reduce' | 'reduceScatter' | 'allGather' | 'broadcast';

interface Piece {
  readonly index: number;
  /** First element of the piece in the message (in each block, for reduceScatter and allGather). */
  readonly offset: number;
  readonly layout: PieceLayout;
}

/** One step on the wire: piece `piece`'s exchange or spread. Steps run one at a time, in the same order on every rank. */
interface WireStep {
  readonly kind: 'exchange' | 'spread';
  readonly piece: number;
}

type Tag = { readonly seq: number; readonly opcode: number; readonly checksum: boolean | undefined };

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
 * A large call runs piece by piece: the wire steps go one at a time (one channel, matched in
 * order), and while one is in flight this rank encodes, reduces or decodes the pieces around it.
 */
export class CompressedCall {
  readonly codec: Codec;
  /** The wire format and the algorithms of the byte phases, for logs and flight records. */
  readonly algorithms: string;
  /** Encoded bytes of the whole message (what the caller's bytes became). */
  readonly encodedBytes: number;
  private readonly plan: CallPlan;
  private readonly collective: Compressible;
  private readonly on: CompressedSite;
  private readonly pieces: readonly Piece[];
  private readonly steps: readonly WireStep[];

  constructor(plan: CallPlan, spec: CompressionSpec, on: CompressedSite) {
    this.plan = plan;
    this.on = on;
    this.collective = plan.collective as Compressible;
    this.codec = codecFor(spec, on.simd);
    const { count, root } = plan.shape;
    const layouts = new Map<number, PieceLayout>();
    const layoutOf = (elements: number) => {
      let layout = layouts.get(elements);
      if (layout === undefined) {
        layout = pieceLayout(this.collective, elements, root, this.codec, on);
        layouts.set(elements, layout);
      }
      return layout;
    };
    const pieceCount = Math.max(1, Math.ceil(count / PIECE_ELEMENTS));
    this.pieces = Array.from({ length: pieceCount }, (_, index) => {
      const offset = index * PIECE_ELEMENTS;
      return { index, offset, layout: layoutOf(Math.min(PIECE_ELEMENTS, count - offset)) };
    });
    this.steps = wireOrder(this.collective, pieceCount);
    const perBlock = this.pieces.reduce((a, p) => a + p.layout.encoded.reduce((x, y) => x + y, 0), 0);
    this.encodedBytes = perBlock * (this.collective === 'allGather' ? on.size : 1);
    const first = this.pieces[0].layout;
    const phases = [first.exchange, first.spread].filter((p): p is BytePhase => p !== undefined);
    this.algorithms = `${compressionLabel(spec)}: ${phases.map((p) => `${p.shape.collective} ${p.schedule.algorithm}`).join(', ')}${pieceCount > 1 ? `, ${pieceCount} pieces` : ''}`;
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

  /** @internal what PipelineRun reads. */
  get internals() {
    return { plan: this.plan, collective: this.collective, on: this.on, pieces: this.pieces, codec: this.codec };
  }
}

/**
 * The order of wire steps: reductions exchange piece s+1 before spreading piece s, so that each
 * piece's reduction runs while the next piece's exchange is on the wire.
 */
function wireOrder(collective: Compressible, pieces: number): WireStep[] {
  const steps: WireStep[] = [];
  const exchanges = collective === 'allReduce' || collective === 'reduce' || collective === 'reduceScatter';
  const spreads = collective !== 'reduceScatter';
  for (let s = 0; s <= pieces; s++) {
    if (exchanges && s < pieces) steps.push({ kind: 'exchange', piece: s });
    const spread = exchanges ? s - 1 : s;
    if (spreads && spread >= 0 && spread < pieces) steps.push({ kind: 'spread', piece: spread });
  }
  return steps;
}

/**
 * The state of one call's pipeline: which pieces are encoded, exchanged, reduced, spread and
 * decoded (each a count of pieces, as they complete in order), and the two sets of buffers
 * pieces alternate between.
 */
class PipelineRun {
  private readonly call: CompressedCall['internals'];
  private readonly views: { input: TypedArray; output: TypedArray };
  private encoded = 0;
  private exchanged = 0;
  private reduced = 0;
  private spread = 0;
  private decoded = 0;
  private readonly send: Uint8Array[];
  private readonly received: Uint8Array[];
  private readonly own: Uint8Array[];
  private readonly gathered: Uint8Array[];
  private readonly scratch: TypedArray;
  private readonly sum: Float32Array;
  private readonly staged: Float32Array;

  constructor(call: CompressedCall, views: { input: TypedArray; output: TypedArray }) {
    this.call = call.internals;
    this.views = views;
    const { workspaces, size } = this.call.on;
    const first = this.call.pieces[0].layout;
    const sendBytes = first.encoded.reduce((a, b) => a + b, 0);
    const slots = this.call.pieces.length > 1 ? 2 : 1;
    const buffers = (name: string, bytes: number) =>
      Array.from({ length: slots }, (_, i) => workspaces.get(`compress-${name}${i}`, BYTES, bytes) as Uint8Array);
    this.send = buffers('send', sendBytes);
    this.received = buffers('received', size * first.widest);
    this.own = buffers('own', first.widest);
    this.gathered = buffers('gathered', size * first.widest);
    const scratchCount = Math.max(first.exchange?.schedule.scratchCount ?? 0, first.spread?.schedule.scratchCount ?? 0);
    this.scratch = workspaces.get('compress-scratch', BYTES, scratchCount);
    const ownChunk = Math.max(...first.chunks.map((c) => c.count));
    this.sum = workspaces.get('compress-sum', FLOAT32, ownChunk) as Float32Array;
    const stagedCount = this.call.collective === 'reduceScatter' ? size * first.count : first.count;
    this.staged = workspaces.get('compress-staged', FLOAT32, stagedCount) as Float32Array;
  }

  /** Runs whatever step `step` still needs, now. */
  prepare(step: WireStep): void {
    // An exchange writes into the buffer of the piece two before it: that piece must be reduced.
    if (step.kind === 'exchange') while (this.reduced < step.piece - 1) this.reducePiece(this.reduced++);
    if (step.kind === 'exchange' || !this.reduces) while (this.encoded <= step.piece) this.encodePiece(this.encoded++);
    else while (this.reduced <= step.piece) this.reducePiece(this.reduced++);
    // A spread writes into the buffer of the piece two before it: that piece must be decoded.
    if (step.kind === 'spread') while (this.decoded < step.piece - 1) this.decodePiece(this.decoded++);
  }

  /** Prepares `step` if what it needs has arrived (its piece exchanged, for a spread). */
  prepareIfReady(step: WireStep): void {
    if (step.kind === 'spread' && this.reduces && this.exchanged <= step.piece) return;
    this.prepare(step);
  }

  start(step: WireStep, tag: Tag, ctx: WaitContext): Promise<void> {
    const piece = this.call.pieces[step.piece];
    const slot = step.piece % this.send.length;
    const { layout } = piece;
    if (step.kind === 'exchange')
      return this.runPhase(layout.exchange!, this.send[slot], this.received[slot], tag, ctx);
    return this.runPhase(layout.spread!, this.own[slot], this.gathered[slot], tag, ctx);
  }

  completed(step: WireStep): void {
    if (step.kind === 'exchange') this.exchanged++;
    else this.spread++;
  }

  /** Reduces exchanged pieces (reduceScatter: into the output) and decodes spread ones. */
  finishReady(): void {
    if (this.call.collective === 'reduceScatter')
      while (this.reduced < this.exchanged) this.reducePiece(this.reduced++);
    while (this.decoded < this.spread) this.decodePiece(this.decoded++);
  }

  finishAll(): void {
    this.finishReady();
  }

  private get reduces(): boolean {
    const c = this.call.collective;
    return c === 'allReduce' || c === 'reduce' || c === 'reduceScatter';
  }

  /** Encodes piece s's input: every chunk into the send buffer (reductions), or this rank's block (gathers). */
  private encodePiece(s: number): void {
    const { codec, collective, on } = this.call;
    const piece = this.call.pieces[s];
    const slot = s % this.send.length;
    const { layout } = piece;
    if (!this.reduces) {
      if (collective === 'broadcast' && on.rank !== this.call.plan.shape.root) return;
      const source = this.inputRange(piece.offset, layout.count, 0);
      codec.encode(source, this.own[slot].subarray(0, layout.encoded[0]));
      return;
    }
    const blockStride = this.call.plan.shape.count;
    let at = 0;
    layout.chunks.forEach((chunk, j) => {
      const start = collective === 'reduceScatter' ? j * blockStride + piece.offset : piece.offset + chunk.offset;
      const source = this.inputRange(start, chunk.count, chunk.offset);
      codec.encode(source, this.send[slot].subarray(at, at + layout.encoded[j]));
      at += layout.encoded[j];
    });
  }

  /** Accumulates piece s's exchanged chunk from every rank in rank order; stores it (reduceScatter) or encodes it for the spread. */
  private reducePiece(s: number): void {
    const { codec, collective, on, plan } = this.call;
    const piece = this.call.pieces[s];
    const slot = s % this.send.length;
    const { layout } = piece;
    const mine = layout.encoded[on.rank];
    const sum = this.sum.subarray(0, layout.chunks[on.rank].count);
    sum.fill(0);
    for (let k = 0; k < on.size; k++) codec.accumulate(this.received[slot].subarray(k * mine, (k + 1) * mine), sum);
    if (plan.op === 'avg') for (let i = 0; i < sum.length; i++) sum[i] = sum[i] / on.size;
    if (collective === 'reduceScatter') {
      storeFloat32(plan.dtype, sum, this.views.output.subarray(piece.offset, piece.offset + sum.length) as TypedArray);
      return;
    }
    codec.encode(sum, this.own[slot].subarray(0, mine));
  }

  /** Decodes piece s's spread blocks into the output (on the root only, for reduce). */
  private decodePiece(s: number): void {
    const { codec, collective, on, plan } = this.call;
    if (collective === 'reduce' && on.rank !== plan.shape.root) return;
    const piece = this.call.pieces[s];
    const slot = s % this.send.length;
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
      const encoded = this.gathered[slot].subarray(j * layout.widest, j * layout.widest + bytes);
      const target = this.views.output.subarray(range.offset, range.offset + range.count) as TypedArray;
      if (this.direct(target)) codec.decode(encoded, target as Float32Array);
      else {
        const staged = this.staged.subarray(0, range.count);
        codec.decode(encoded, staged);
        storeFloat32(plan.dtype, staged, target);
      }
    }
  }

  /** Whether the codec works on `array` itself: float32 in the arena, where the SIMD loops reach it. */
  private direct(array: TypedArray): boolean {
    const { plan, on } = this.call;
    return plan.dtype.name === 'float32' && (on.simd === undefined || on.simd.contains(array));
  }

  /** count input elements from `start` as float32 where the codec reaches them: themselves, or staged at stagedAt. */
  private inputRange(start: number, count: number, stagedAt: number): Float32Array {
    const view = this.views.input.subarray(start, start + count) as TypedArray;
    if (this.direct(view)) return view as Float32Array;
    const staged = this.staged.subarray(stagedAt, stagedAt + count);
    loadFloat32(this.call.plan.dtype, view, staged);
    return staged;
  }

  private runPhase(phase: BytePhase, input: Uint8Array, output: Uint8Array, tag: Tag, ctx: WaitContext): Promise<void> {
    const { transport, kernel } = this.call.on;
    return executeSchedule({
      schedule: phase.schedule,
      buffers: { input, output, scratch: this.scratch },
      dtype: BYTES,
      kernel,
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
