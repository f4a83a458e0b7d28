export { init, type InitOptions } from './comm/init.js';
export {
  Communicator, type AllToAllOptions, type CallOptions, type ReduceOptions, type RootedOptions, type SplitOptions,
} from './comm/communicator.js';
export { run, type RankOutcome, type RunOptions, type RunResult } from './launch/run.js';
export { ErrorCode, TscclError, type ErrorCodeValue, type TscclErrorDetails } from './errors.js';
export { DTYPE_NAMES, type DType, type DTypeArrayMap, type TypedArray } from './dtypes/dtype.js';
export { REDUCE_OPS, type ReduceOp } from './kernels/reduce-op.js';
export { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfToFloat } from './dtypes/half.js';
