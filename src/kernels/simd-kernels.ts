import { paramString } from '../config/params.js';
import type { DType, TypedArray } from '../dtypes/dtype.js';
import type { Arena } from '../memory/arena.js';
import { type ReduceKernel, reduceKernel, scaleKernel } from './reduce-kernel.js';
import type { ReduceOp } from './reduce-op.js';
import { REDUCE_SIMD_WASM } from './reduce-simd-wasm.js';
import type { CodecSimd } from './codec-simd.js';
import { CODEC_SIMD_WASM } from './codec-simd-wasm.js';

/**
 * Reductions in WebAssembly SIMD, run directly on the shared arena (the kernel module imports the
 * arena's memory, so operands are just byte offsets). Below MIN_ELEMENTS the call costs more than
 * it saves; 16-bit floats use the JS loops. Memory outside the arena (a TCP payload, a user's
 * plain Float32Array) is staged in blocks through the arena: copying two operands in and the
 * result out around a SIMD pass runs 2.5-3x faster than the JS loop (float32 sum of plain
 * arrays: 5-8 GB/s against 2.2-2.5).
 */
const MIN_ELEMENTS = 64;
/** Below this many bytes, staging memory from outside the arena costs more than SIMD saves (float32 sum: 256 elements break even, 64 run at a third of the JS loop's speed). */
const STAGE_MIN_BYTES = 2048;
const STAGE_BYTES = 256 * 1024;
const WASM_NAMES: Partial<Record<DType, string>> = {
  float32: 'f32',
  float64: 'f64',
  int32: 'i32',
  uint32: 'u32',
  int8: 'i8',
  uint8: 'u8',
  int64: 'i64',
  uint64: 'u64',
};

const compiled = new Map<string, WebAssembly.Module | null>();

/** A kernel module, or null where SIMD is missing or TSCCL_KERNEL=js. */
function kernelModule(base64: string): WebAssembly.Module | null {
  let module = compiled.get(base64);
  if (module === undefined) {
    const bytes = Buffer.from(base64, 'base64');
    module = paramString('TSCCL_KERNEL') !== 'js' && WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    compiled.set(base64, module);
  }
  return module;
}

type WasmReduce = (d: number, a: number, b: number, n: number) => void;
type WasmDivide = (x: number, n: number, divisor: number) => void;
type ScaleKernel = (x: TypedArray, divisor: number) => void;

export class ArenaKernels {
  /** 'simd' when the WASM kernels are in use, 'js' otherwise. */
  readonly kind: 'simd' | 'js';
  private readonly arena: Arena;
  private readonly exports: Record<string, unknown> | undefined;
  private readonly cache = new Map<string, ReduceKernel>();
  private readonly scaleCache = new Map<DType, ScaleKernel>();
  /** Arena offsets of the staging blocks of a result and two operands from outside the arena (allocated on first use). */
  private stage: [number, number, number] | undefined;

  constructor(arena: Arena) {
    this.arena = arena;
    const module = kernelModule(REDUCE_SIMD_WASM);
    this.exports =
      module === null ? undefined : new WebAssembly.Instance(module, { env: { memory: arena.memory } }).exports;
    this.kind = this.exports === undefined ? 'js' : 'simd';
  }

  private codecLoops: CodecSimd | null | undefined;

  /** The compression codecs' SIMD loops on this arena (undefined where the JS loops run), instantiated on first use. */
  get codecs(): CodecSimd | undefined {
    if (this.codecLoops === undefined) {
      const module = kernelModule(CODEC_SIMD_WASM);
      const arena = this.arena;
      this.codecLoops =
        module === null
          ? null
          : {
              ...(new WebAssembly.Instance(module, { env: { memory: arena.memory } }).exports as unknown as Omit<
                CodecSimd,
                'contains'
              >),
              contains: (view) => arena.contains(view),
            };
    }
    return this.codecLoops ?? undefined;
  }

  /** dst = a (op) b, as reduceKernel, using SIMD when all three live in the arena. */
  reduce(dtype: DType, op: ReduceOp): ReduceKernel {
    const key = `${dtype}:${op}`;
    let kernel = this.cache.get(key);
    if (kernel === undefined) {
      const js = reduceKernel(dtype, op);
      const name = WASM_NAMES[dtype];
      const wasm =
        name === undefined
          ? undefined
          : (this.exports?.[`${name}_${op === 'avg' ? 'sum' : op}`] as WasmReduce | undefined);
      const arena = this.arena;
      // One call of the JavaScript loop for every case it takes: a call site that only a job's
      // own arrays reached, never init's warm-up, had no feedback, and V8 threw the compiled
      // kernel away at the job's first such call (docs/tuning.md, "Arrays of one kind").
      kernel =
        wasm === undefined
          ? js
          : (d: TypedArray, a: TypedArray, b: TypedArray) => {
              if (d.length >= MIN_ELEMENTS) {
                const dInside = arena.contains(d);
                const aInside = arena.contains(a);
                const bInside = arena.contains(b);
                if (dInside && aInside && bInside) return wasm(d.byteOffset, a.byteOffset, b.byteOffset, d.length);
                if (d.byteLength >= STAGE_MIN_BYTES)
                  return this.reduceStaged(wasm, [d, a, b], [dInside, aInside, bInside]);
              }
              js(d, a, b);
            };
      this.cache.set(key, kernel);
    }
    return kernel;
  }

  /** x[i] = x[i] / divisor, as scaleKernel, in SIMD for float32 and float64 arrays in the arena. */
  scale(dtype: DType): ScaleKernel {
    let kernel = this.scaleCache.get(dtype);
    if (kernel === undefined) {
      const js = scaleKernel(dtype);
      const name = WASM_NAMES[dtype];
      const wasm = name === undefined ? undefined : (this.exports?.[`${name}_divide`] as WasmDivide | undefined);
      const arena = this.arena;
      kernel =
        wasm === undefined
          ? js
          : (x: TypedArray, divisor: number) => {
              if (x.length >= MIN_ELEMENTS && arena.contains(x)) wasm(x.byteOffset, x.length, divisor);
              else js(x, divisor);
            };
      this.scaleCache.set(dtype, kernel);
    }
    return kernel;
  }

  /**
   * d = a (op) b where some of the three live outside the arena: block by block, each outside
   * operand is copied into an arena staging block (and an outside result copied out of one).
   * Blocks go in order, so a result that is also an operand (in place) reads each block before
   * it writes it.
   */
  private reduceStaged(
    wasm: WasmReduce,
    views: readonly [TypedArray, TypedArray, TypedArray],
    inside: readonly [boolean, boolean, boolean],
  ): void {
    const stage = (this.stage ??= [
      this.arena.allocate(STAGE_BYTES),
      this.arena.allocate(STAGE_BYTES),
      this.arena.allocate(STAGE_BYTES),
    ]);
    const [d, a, b] = views;
    const elementBytes = d.BYTES_PER_ELEMENT;
    const block = STAGE_BYTES / elementBytes;
    for (let at = 0; at < d.length; at += block) {
      const count = Math.min(block, d.length - at);
      const from = at * elementBytes;
      const bytes = count * elementBytes;
      const aAt = inside[1] ? a.byteOffset + from : this.stageIn(a, from, bytes, stage[1]);
      const bAt = inside[2] ? b.byteOffset + from : this.stageIn(b, from, bytes, stage[2]);
      wasm(inside[0] ? d.byteOffset + from : stage[0], aAt, bAt, count);
      if (!inside[0]) byteView(d, from, bytes).set(this.arena.bytes(stage[0], bytes));
    }
  }

  /** Copies `bytes` of `view` from its byte `from` into the staging block at arena offset `into`; returns `into`. */
  private stageIn(view: TypedArray, from: number, bytes: number, into: number): number {
    this.arena.bytes(into, bytes).set(byteView(view, from, bytes));
    return into;
  }
}

/** `bytes` bytes of `view` from its byte `from`. */
function byteView(view: TypedArray, from: number, bytes: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset + from, bytes);
}

const perArena = new WeakMap<Arena, ArenaKernels>();

/** The kernels of this thread for an arena (one WebAssembly instance per thread and arena). */
export function arenaKernels(arena: Arena): ArenaKernels {
  let kernels = perArena.get(arena);
  if (kernels === undefined) perArena.set(arena, (kernels = new ArenaKernels(arena)));
  return kernels;
}
