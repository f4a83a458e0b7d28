import type { SplitOptions } from '../comm/call-options.js';
import { invalidArgument } from '../errors.js';

/** A communicator that can be split into groups (an inline one, or one on a progress engine). */
export interface Splittable<C> {
  readonly rank: number;
  readonly size: number;
  split(options: SplitOptions): Promise<C | null>;
}

export interface ParallelSizes {
  /** Ranks a layer is split over (tensor parallelism); they should share a host. Default 1. */
  tensor?: number;
  /** Stages the model is cut into. Default 1. */
  pipeline?: number;
  /** Replicas of the whole model; by default what the world has left. */
  data?: number;
}

/** Where a rank sits in each dimension, and its communicator in each. */
export interface ParallelGroups<C> {
  readonly tensor: C;
  readonly pipeline: C;
  readonly data: C;
  readonly coords: { readonly tensor: number; readonly pipeline: number; readonly data: number };
  readonly sizes: { readonly tensor: number; readonly pipeline: number; readonly data: number };
}

/**
 * Data x pipeline x tensor groups of the world, in Megatron-LM's order: tensor-parallel ranks
 * are consecutive (rank = (data * pipeline + stage) * tensor + t), so they share a host when
 * hosts hold consecutive ranks; pipeline stages come next, and replicas are outermost. Three
 * splits of the world: every rank must call it, with the same sizes.
 */
export async function parallelGroups<C>(world: Splittable<C>, sizes: ParallelSizes = {}): Promise<ParallelGroups<C>> {
  const tensor = sizes.tensor ?? 1;
  const pipeline = sizes.pipeline ?? 1;
  for (const [name, value] of Object.entries({ tensor, pipeline })) {
    if (!Number.isInteger(value) || value < 1) {
      throw invalidArgument(`parallelGroups: ${name} must be a positive integer, got ${value}`, {
        rank: world.rank,
        argument: name,
      });
    }
  }
  const data = sizes.data ?? world.size / (tensor * pipeline);
  if (!Number.isInteger(data) || data < 1 || tensor * pipeline * data !== world.size) {
    throw invalidArgument(
      `parallelGroups: tensor (${tensor}) x pipeline (${pipeline}) x data (${sizes.data ?? 'the rest'}) must be the world's ${world.size} ranks`,
      { rank: world.rank, argument: 'sizes' },
    );
  }
  const t = world.rank % tensor;
  const p = Math.floor(world.rank / tensor) % pipeline;
  const d = Math.floor(world.rank / (tensor * pipeline));
  const tensorGroup = await world.split({ color: d * pipeline + p, key: t });
  const pipelineGroup = await world.split({ color: d * tensor + t, key: p });
  const dataGroup = await world.split({ color: p * tensor + t, key: d });
  return {
    tensor: tensorGroup as C,
    pipeline: pipelineGroup as C,
    data: dataGroup as C,
    coords: { tensor: t, pipeline: p, data: d },
    sizes: { tensor, pipeline, data },
  };
}
