import {
  type CallShape,
  type Collective,
  REDUCING_COLLECTIVES,
  bufferCounts,
  inPlaceExtent,
  inPlaceLayout,
} from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import { type ReduceOp, checkOpForType, parseReduceOp } from '../kernels/reduce-op.js';
import type { CompressionSpec } from '../compress/compression-spec.js';
import { invalidArgument } from '../errors.js';
import { checkLength, checkSameType, checkTypedArray } from './validate.js';

/** A call after argument checks: what to run and on which memory. */
export interface CallPlan {
  readonly collective: Collective;
  readonly label: string;
  readonly dtype: DTypeInfo;
  readonly op: ReduceOp;
  readonly shape: CallShape;
  readonly input: TypedArray | undefined;
  readonly output: TypedArray | undefined;
  readonly algorithm: string | undefined;
  /** The wire format the call compresses to (compressed-call), if any. */
  readonly compression: CompressionSpec | undefined;
}

/**
 * A call's arguments as its public method resolved them. Every key is always present, and every
 * place that makes one lists them in this order: then all requests share one object shape, and
 * the code that reads them (the plan memo on every call) stays compiled for it whichever
 * collective comes next.
 */
export interface PlanRequest {
  readonly collective: Collective;
  readonly dtype: DTypeInfo;
  /** The reduction as the caller named it (default 'sum'); undefined where the collective has none. */
  readonly op: unknown;
  /** Elements per block (the collective's count). */
  readonly count: number;
  readonly root: number;
  readonly input: TypedArray;
  /** The output array; undefined (or the input itself) for in place. */
  readonly output: TypedArray | undefined;
  readonly algorithm: string | undefined;
  readonly compression: CompressionSpec | undefined;
  /** All-to-all-v's counts and displacements; undefined for equal blocks. */
  readonly variable: Partial<CallShape> | undefined;
}

/** The communicator a call is planned on. */
export interface PlanSite {
  readonly rank: number;
  readonly size: number;
  /** Host index of every rank, when they span several hosts. */
  readonly hosts: readonly number[] | undefined;
}

/**
 * The plan of a call: its reduction checked against the dtype, its shape, and the buffers it
 * needs checked for type and length (throwing TSCCL_ERR_INVALID_ARGUMENT naming the argument).
 * Pure: the same request on the same site gives the same plan.
 */
export function planCall(request: PlanRequest, site: PlanSite): CallPlan {
  const { collective, dtype, count, root, input, output, algorithm } = request;
  const { rank } = site;
  const op = parseReduceOp(request.op ?? 'sum');
  checkOpForType(op, dtype);
  if (request.compression !== undefined) checkCompressible(request, op, site);
  if (output !== undefined) checkTypedArray(output, 'output', rank);
  const inPlace = output === undefined || output === input;
  const equalBlocks: CallShape = { collective, nranks: site.size, count, root, inPlace, chunkCount: 0 };
  // Spread only where there is more to it: copying properties is most of planning a small call.
  const shape: CallShape =
    request.variable === undefined && site.hosts === undefined
      ? equalBlocks
      : { ...equalBlocks, ...request.variable, ...(site.hosts ? { hosts: site.hosts } : {}) };
  if (inPlace) {
    checkLength(input, inPlaceExtent(shape, rank), 'buffer', rank, shape);
  } else {
    const needed = bufferCounts(shape, rank);
    checkSameType(output, dtype, 'output', rank);
    checkLength(input, needed.input, 'buffer', rank, shape);
    checkLength(output, needed.output, 'output', rank, shape);
  }
  return {
    collective,
    label: collective,
    dtype,
    op,
    shape,
    input,
    output: inPlace ? undefined : output,
    algorithm,
    compression: request.compression,
  };
}

const COMPRESSIBLE_DTYPES = new Set(['float32', 'float16', 'bfloat16']);

/** The dtypes a compressed call takes. */
export const isCompressible = (dtype: DTypeInfo): boolean => COMPRESSIBLE_DTYPES.has(dtype.name);

/** Compression takes float data, sums or averages, and runs its own schedule. */
function checkCompressible(request: PlanRequest, op: ReduceOp, site: PlanSite): void {
  const { rank } = site;
  const refuse = (why: string) =>
    invalidArgument(`Rank ${rank}: ${request.collective} with compression ${request.compression!.format}: ${why}`, {
      rank,
      argument: 'compression',
      op: request.collective,
    });
  if (!COMPRESSIBLE_DTYPES.has(request.dtype.name))
    throw refuse(`the buffer is ${request.dtype.name}; compression takes float32, float16 or bfloat16 data`);
  if (op !== 'sum' && op !== 'avg') throw refuse(`op is '${op}'; compressed reductions take 'sum' or 'avg'`);
  if (request.algorithm !== undefined)
    throw refuse(`algorithm '${request.algorithm}' was given; a compressed call runs its own schedule`);
  const { residual } = request.compression!;
  if (residual !== undefined) {
    if (!REDUCING_COLLECTIVES.has(request.collective))
      throw refuse('a residual (error feedback) belongs to reductions; allGather and broadcast send each value once');
    const inputs = request.collective === 'reduceScatter' ? request.count * site.size : request.count;
    if (residual.length !== inputs)
      throw refuse(
        `the residual holds ${residual.length} elements but the input has ${inputs}: one error term per input element`,
      );
  }
}

/** A call's input and output views on `rank`: over `user` alone when in place, else over both arrays. */
export function callViews(
  shape: CallShape,
  rank: number,
  buffers: { user: TypedArray; output: TypedArray | undefined },
): { input: TypedArray; output: TypedArray } {
  const { user, output } = buffers;
  const counts = bufferCounts(shape, rank);
  // An array of the view's length is its own view: a call on fresh arrays makes no views of them.
  if (output !== undefined)
    return {
      input: user.length === counts.input ? user : (user.subarray(0, counts.input) as TypedArray),
      output: output.length === counts.output ? output : (output.subarray(0, counts.output) as TypedArray),
    };
  const layout = inPlaceLayout(shape, rank);
  const inner = user.subarray(layout.offset, layout.offset + counts[layout.inner]) as TypedArray;
  const outer = user.subarray(0, inPlaceExtent(shape, rank)) as TypedArray;
  return layout.inner === 'input' ? { input: inner, output: outer } : { input: outer, output: inner };
}
