import type { DType, DTypeArrayMap, TypedArray } from '../dtypes/dtype.js';
import { dtypeInfo } from '../dtypes/dtype.js';
import { invalidArgument } from '../errors.js';
import type { TrainingComm } from './gradient-sync.js';

/**
 * The data-parallel communicator of a model that is not replicated (pure pipeline or tensor
 * parallelism): one rank, where an average is the value itself and nothing moves.
 */
export class SoloComm implements TrainingComm {
  readonly rank = 0;
  readonly size = 1;

  alloc<D extends DType>(dtype: D, count: number): DTypeArrayMap[D] {
    const info = dtypeInfo(dtype);
    return new (info.ctor as new (n: number) => TypedArray)(count) as DTypeArrayMap[D];
  }

  free(): void {}

  async allReduce(): Promise<void> {}

  async reduceScatter(): Promise<void> {}

  async allGather(): Promise<void> {}

  async broadcast(): Promise<void> {}

  send(_buffer: TypedArray, peer: number): Promise<void> {
    return Promise.reject(invalidArgument(`a communicator of one rank has no peer ${peer}`, { argument: 'peer' }));
  }

  recv(_buffer: TypedArray, peer: number): Promise<void> {
    return Promise.reject(invalidArgument(`a communicator of one rank has no peer ${peer}`, { argument: 'peer' }));
  }
}
