import { paramString } from '../config/params.js';
import type { DType, TypedArray } from '../dtypes/dtype.js';
import type { Arena } from '../memory/arena.js';
import { type ReduceKernel, reduceKernel } from './reduce-kernel.js';
import type { ReduceOp } from './reduce-op.js';
import { REDUCE_SIMD_WASM } from './reduce-simd-wasm.js';

/**
 * Reductions in WebAssembly SIMD, run directly on the shared arena (the kernel module imports the
 * arena's memory, so operands are just byte offsets). Below MIN_ELEMENTS the call costs more than
 * it saves; 16-bit floats and results outside the arena use the JS loops. An operand outside the
 * arena (a TCP payload, say) is copied in blocks into an arena staging area first: a copy and a
 * SIMD pass run 3-4x faster than the JS loop.
 */
const MIN_ELEMENTS = 64;
const STAGE_BYTES = 256 * 1024;
const WASM_NAMES: Partial<Record<DType, string>> = {
  float32: 'f32', float64: 'f64', int32: 'i32', uint32: 'u32', int8: 'i8', uint8: 'u8', int64: 'i64', uint64: 'u64',
};

let compiled: WebAssembly.Module | null | undefined;

/** The kernel module, or null where SIMD is missing or TSCCL_KERNEL=js. */
function kernelModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    const bytes = Buffer.from(REDUCE_SIMD_WASM, 'base64');
    compiled = paramString('TSCCL_KERNEL') !== 'js' && WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
  }
  return compiled;
}

type WasmReduce = (d: number, a: number, b: number, n: number) => void;

export class ArenaKernels {
  /** 'simd' when the WASM kernels are in use, 'js' otherwise. */
  readonly kind: 'simd' | 'js';
  private readonly arena: Arena;
  private readonly exports: Record<string, unknown> | undefined;
  private readonly cache = new Map<string, ReduceKernel>();
  /** Arena offsets of the two staging blocks for operands from outside the arena (allocated on first use). */
  private stage: [number, number] | undefined;

  constructor(arena: Arena) {
    this.arena = arena;
    const module = kernelModule();
    this.exports = module === null ? undefined : new WebAssembly.Instance(module, { env: { memory: arena.memory } }).exports;
    this.kind = this.exports === undefined ? 'js' : 'simd';
  }

  /** dst = a (op) b, as reduceKernel, using SIMD when all three live in the arena. */
  reduce(dtype: DType, op: ReduceOp): ReduceKernel {
    const key = `${dtype}:${op}`;
    let kernel = this.cache.get(key);
    if (kernel === undefined) {
      const js = reduceKernel(dtype, op);
      const name = WASM_NAMES[dtype];
      const wasm = name === undefined ? undefined : this.exports?.[`${name}_${op === 'avg' ? 'sum' : op}`] as WasmReduce | undefined;
      const arena = this.arena;
      kernel = wasm === undefined ? js : (d: TypedArray, a: TypedArray, b: TypedArray) => {
        if (d.length < MIN_ELEMENTS || !arena.contains(d)) return js(d, a, b);
        const aInside = arena.contains(a);
        const bInside = arena.contains(b);
        if (aInside && bInside) wasm(d.byteOffset, a.byteOffset, b.byteOffset, d.length);
        else this.reduceStaged(wasm, d, aInside ? undefined : a, bInside ? undefined : b, a, b);
      };
      this.cache.set(key, kernel);
    }
    return kernel;
  }

  /** d = a (op) b where `foreignA`/`foreignB` (when given) live outside the arena: staged block by block. */
  private reduceStaged(wasm: WasmReduce, d: TypedArray, foreignA: TypedArray | undefined, foreignB: TypedArray | undefined, a: TypedArray, b: TypedArray): void {
    this.stage ??= [this.arena.allocate(STAGE_BYTES), this.arena.allocate(STAGE_BYTES)];
    const [stageA, stageB] = this.stage;
    const elementBytes = d.BYTES_PER_ELEMENT;
    const block = STAGE_BYTES / elementBytes;
    const staged = (foreign: TypedArray, at: number, count: number, offset: number) => {
      this.arena.bytes(offset, count * elementBytes).set(new Uint8Array(foreign.buffer, foreign.byteOffset + at * elementBytes, count * elementBytes));
      return offset;
    };
    for (let at = 0; at < d.length; at += block) {
      const count = Math.min(block, d.length - at);
      const aOffset = foreignA === undefined ? a.byteOffset + at * elementBytes : staged(foreignA, at, count, stageA);
      const bOffset = foreignB === undefined ? b.byteOffset + at * elementBytes : staged(foreignB, at, count, stageB);
      wasm(d.byteOffset + at * elementBytes, aOffset, bOffset, count);
    }
  }
}

const perArena = new WeakMap<Arena, ArenaKernels>();

/** The kernels of this thread for an arena (one WebAssembly instance per thread and arena). */
export function arenaKernels(arena: Arena): ArenaKernels {
  let kernels = perArena.get(arena);
  if (kernels === undefined) perArena.set(arena, (kernels = new ArenaKernels(arena)));
  return kernels;
}
