export { init, type InitOptions } from './progress/init.js';
export { EngineCommunicator } from './progress/engine-communicator.js';
export { Work } from './comm/work.js';
export type { Group, GroupCallPrediction, GroupPrediction } from './comm/call-group.js';
export {
  Communicator,
  type AllToAllOptions,
  type CallOptions,
  type CollectiveOptions,
  type PredictOptions,
  type ReduceOptions,
  type RootedOptions,
  type RootedReduceOptions,
  type ShrinkOptions,
  type SplitOptions,
} from './comm/communicator.js';
export { run, type RankOutcome, type RunOptions, type RunResult } from './launch/run.js';
export { ErrorCode, TscclError, type ErrorCodeValue, type TscclErrorDetails } from './errors.js';
export { DTYPE_NAMES, type DType, type DTypeArrayMap, type TypedArray } from './dtypes/dtype.js';
export { REDUCE_OPS, type ReduceOp } from './kernels/reduce-op.js';
export type { CompressionReport } from './comm/compression-shadow.js';
export type { CommStats } from './comm/comm-stats.js';
export type { RecoveryCounts } from './transport/transport.js';
export {
  COMPRESSION_FORMATS,
  type CompressionFormat,
  type CompressionOption,
} from './compress/compression-spec.js';
export { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfToFloat } from './dtypes/half.js';
export {
  float8e4m3ToFloat,
  float8e5m2ToFloat,
  floatToFloat8e4m3,
  floatToFloat8e5m2,
} from './dtypes/float8.js';
export { launch, type LaunchOptions } from './launch/launch.js';
export { MemoryStore } from './store/memory-store.js';
export { FileStore } from './store/file-store.js';
export { TcpStoreServer } from './store/tcp-store-server.js';
export { TcpStoreClient } from './store/tcp-store-client.js';
export { PrefixStore, type Store, type StoreCallOptions } from './store/store.js';
export { dumpFlightRecords } from './debug/flight-recorder.js';
export type { Prediction } from './tuner/predict.js';
