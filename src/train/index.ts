// tsccl/train: training TensorFlow.js models over tsccl communicators. TensorFlow.js is an
// optional peer dependency, loaded only through this entry point.
export { loadTf, type LoadTfOptions, type Tf, type TrainBackend } from './load-tf.js';
export { type LayeredModel, type ModelLayer, modelParams, parameterCount } from './layered-model.js';
export { createGpt, type GptConfig } from './gpt.js';
export { TextCorpus, generateText, type BatchOptions, type TokenBatch } from './text-corpus.js';
export { GRADIENT_HOOKS, type GradientHook } from './gradient-buckets.js';
export {
  DataParallel,
  batchTensors,
  type Batch,
  type DataParallelOptions,
  type StepOptions,
  type StepReport,
} from './data-parallel.js';
export {
  GradientSync,
  type GradientSyncOptions,
  type SyncReport,
  type TrainingComm,
  type TrainingMemory,
} from './gradient-sync.js';
export { forwardLayer } from './layer-runner.js';
export type { CommLayer, Forwarded, Layer, LayerGradients } from './layered-model.js';
export {
  PipelineParallel,
  PIPELINE_SCHEDULES,
  evenStageLayers,
  pipelineOrder,
  type PipelineOptions,
  type PipelineSchedule,
  type PipelineStepReport,
} from './pipeline-parallel.js';
export { parallelGroups, type ParallelGroups, type ParallelSizes, type Splittable } from './parallel-groups.js';
export { columnShare, rowShare, tensorParallelResidual, type TensorParallelComm } from './tensor-parallel.js';
export { SoloComm } from './solo-comm.js';
export { StepTrace, epochMs, writeTrace, type TraceEvent, type TraceWorld, type TracedComm } from './step-trace.js';
export { modelSpec, writeModelSpec } from './model-spec.js';
