import type { TscclChooser } from '../sim/simulate.js';
import { ONE_SHOT_CAPACITY, choiceOn } from './predict.js';

/**
 * The tuner's choice as the simulator asks for it on ranks that run tsccl: the selection the
 * communicator would make (the one-shot path offered where the transport has it), so that
 * `tsccl sim` names and times what a real run does.
 */
export const tscclChooser: TscclChooser = (graph, call) => {
  const { selection, count } = choiceOn(graph, { ...call, oneShotCapacity: ONE_SHOT_CAPACITY[call.transport] });
  return { algorithm: selection.algorithm, chunkCount: selection.chunkCount, count };
};
