import { buildSchedule } from '../algorithms/registry.js';
import { type Schedule, bufferCounts } from '../algorithms/schedule.js';
import { LocalCopy } from '../exec/local-copy.js';
import { OneShotCall, OneShotCommon } from '../exec/one-shot.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import { arenaKernels } from '../kernels/simd-kernels.js';
import type { Arena } from '../memory/arena.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { opcodeOf } from '../transport/transport.js';
import { localMachine } from '../sim/machine-cost.js';
import { selectForCall } from '../tuner/predict.js';
import type { Selection } from '../tuner/select.js';
import type { CommBackend } from './backend.js';
import { algorithmOverrides, debugCheck } from './call-defaults.js';
import { type CallPlan, callViews } from './call-plan.js';

/** What a call's shape decided on this rank, whatever arrays it runs on (and the checksum choice). */
export interface CallChoice {
  readonly checksum: boolean | undefined;
  /** The call's size as the tuner sized it: the root's input bytes. */
  readonly bytes: number;
  readonly selection: Selection;
  readonly kernel: ReduceKernel;
  readonly opcode: number;
  /** Divides the output by the rank count (avg) on ranks that hold a result. */
  readonly scale: boolean;
  /** Which way the call runs: the one-shot path, a one-rank copy, or a schedule. */
  readonly path: 'one-shot' | 'local' | 'schedule';
  /** This rank's schedule where it runs one: built once per shape, not looked up per call. */
  readonly schedule: Schedule | undefined;
  /** What the shape's one-shot calls share where it runs them (its plan, views of the peers' messages). */
  readonly oneShotCommon: OneShotCommon | undefined;
}

/** What a plan runs with on this rank, decided once per plan. */
export interface PreparedCall extends CallChoice {
  readonly plan: CallPlan;
  /** The one-shot run, where the tuner chose it. */
  readonly oneShot: OneShotCall | undefined;
  /** A communicator of one rank: the copy that is the whole call. */
  readonly local: LocalCopy | undefined;
}

/** What the tuner's selection knows of a communicator: the same for a call it runs and one it predicts. */
export interface SelectionSite {
  readonly transport: 'shm' | 'tcp';
  readonly hostCount: number;
  readonly oversubscribed: boolean;
  /** What one low-latency message holds, where the transport has the one-shot path. */
  readonly oneShotCapacity: number | undefined;
  readonly debugCheck: boolean;
  /** Thread ranks: this machine as the cost model sees it, built on first use. */
  readonly machine: () => TopologyGraph;
}

export function selectionSite(backend: CommBackend, size: number): SelectionSite {
  const hosts = backend.hosts;
  return {
    transport: backend.kind,
    hostCount: hosts === undefined ? 1 : Math.max(...hosts) + 1,
    oversubscribed: backend.oversubscribed,
    oneShotCapacity: backend.transport.lowLatency?.capacity,
    debugCheck,
    machine: () => localMachine(size, 'shm').graph,
  };
}

/** Chooses the algorithm for a plan and builds what it runs with (the one-shot run, if chosen). */
export function prepareCall(
  plan: CallPlan,
  on: { rank: number; backend: CommBackend; arena: Arena; site: SelectionSite; checksum: boolean | undefined },
): PreparedCall {
  const { dtype, shape } = plan;
  const { rank, checksum } = on;
  // The root's input, not this rank's: the same on every rank (a broadcast's non-root input is
  // empty), so every rank picks the same schedule for a size-dependent rule.
  const bytes = bufferCounts(shape, shape.root).input * dtype.bytes;
  const selection = selectForCall({
    ...on.site,
    shape,
    bytes,
    elementBytes: dtype.bytes,
    algorithm: plan.algorithm ?? algorithmOverrides.get(plan.collective),
    checksum,
  });
  const kernel = arenaKernels(on.arena).reduce(dtype.name, plan.op);
  const opcode = opcodeOf(plan.collective);
  const scale = plan.op === 'avg' && (plan.collective !== 'reduce' || rank === shape.root);
  // All-to-all-v's blocks sit where its displacements say, which a plain copy does not follow.
  // The one-shot path copies through its slots anyway, so user memory needs no staging.
  const path =
    shape.nranks === 1 && shape.sendCounts === undefined
      ? 'local'
      : selection.protocol === 'll'
        ? 'one-shot'
        : 'schedule';
  const schedule =
    path === 'schedule'
      ? buildSchedule({ ...shape, chunkCount: selection.chunkCount }, rank, selection.algorithm)
      : undefined;
  const oneShotCommon = path === 'one-shot' ? new OneShotCommon(shape, rank) : undefined;
  return onArrays({ checksum, bytes, selection, kernel, opcode, scale, path, schedule, oneShotCommon }, plan, on);
}

/** A choice made ready to run on `plan`'s arrays: the one-shot run or the one-rank copy that reads them. */
function onArrays(choice: CallChoice, plan: CallPlan, on: { rank: number; backend: CommBackend }): PreparedCall {
  const { checksum, bytes, selection, kernel, opcode, scale, path, schedule, oneShotCommon } = choice;
  const { shape, dtype } = plan;
  const views = path === 'schedule' ? undefined : callViews(shape, on.rank, { user: plan.input!, output: plan.output });
  const local = path === 'local' ? new LocalCopy(views!) : undefined;
  const oneShot =
    path === 'one-shot'
      ? new OneShotCall({
          shape,
          rank: on.rank,
          input: views!.input,
          output: views!.output,
          dtype,
          kernel,
          slots: on.backend.transport.lowLatency!,
          opcode,
          common: oneShotCommon,
        })
      : undefined;
  return { plan, checksum, bytes, selection, kernel, opcode, scale, path, schedule, oneShotCommon, oneShot, local };
}

/**
 * What a prepared call keeps of its call apart from the arrays: enough to run the same call on
 * other arrays without choosing again. Holds no array, so a communicator may keep several (a job
 * that takes turns between calls of a few shapes, a loss and a gradient bucket, keeps each one's).
 */
export interface CallRecipe extends CallChoice {
  /** The call's plan without its arrays. */
  readonly plan: CallPlan;
}

export function recipeOf(prepared: PreparedCall): CallRecipe {
  const { plan, oneShot: _oneShot, local: _local, ...choice } = prepared;
  return { ...choice, plan: { ...plan, input: undefined, output: undefined } };
}

/**
 * `recipe` prepared for `plan`, where `plan` is the recipe's call on other arrays (a job that
 * passes a fresh array each call, as a loss or a tensor's data): its selection, kernel and
 * schedule are reused, and only what reads the arrays is made again; undefined where anything
 * else differs. Choosing afresh is most of a small call's cost (bench/RESULTS.md, "Calls on a
 * fresh array, and calls of several shapes in turn").
 */
export function rebindCall(
  recipe: CallRecipe,
  plan: CallPlan,
  checksum: boolean | undefined,
  on: { rank: number; backend: CommBackend },
): PreparedCall | undefined {
  if (recipe.checksum !== checksum || !sameCallOnOtherArrays(recipe.plan, plan)) return undefined;
  return onArrays(recipe, plan, on);
}

/** Whether two plans differ in their arrays alone (equal blocks, no compression). */
function sameCallOnOtherArrays(a: CallPlan, b: CallPlan): boolean {
  const x = a.shape;
  const y = b.shape;
  return (
    a.collective === b.collective &&
    a.label === b.label &&
    a.dtype === b.dtype &&
    a.op === b.op &&
    a.algorithm === b.algorithm &&
    a.compression === undefined &&
    b.compression === undefined &&
    x.count === y.count &&
    x.root === y.root &&
    x.inPlace === y.inPlace &&
    x.nranks === y.nranks &&
    x.chunkCount === y.chunkCount &&
    x.sendCounts === undefined &&
    y.sendCounts === undefined &&
    x.recvCounts === undefined &&
    y.recvCounts === undefined
  );
}

/**
 * The recipes of a communicator's recent calls, the most recent first, at most RECIPES_KEPT: a
 * call of one of their shapes on any arrays is prepared from its recipe.
 */
export class RecipeCache {
  private readonly recipes: CallRecipe[] = [];

  /** `plan` prepared from a kept recipe of its shape, or undefined. */
  rebind(
    plan: CallPlan,
    checksum: boolean | undefined,
    on: { rank: number; backend: CommBackend },
  ): PreparedCall | undefined {
    const recipes = this.recipes;
    for (let i = 0; i < recipes.length; i++) {
      const prepared = rebindCall(recipes[i], plan, checksum, on);
      if (prepared === undefined) continue;
      if (i > 0) recipes.unshift(recipes.splice(i, 1)[0]);
      return prepared;
    }
    return undefined;
  }

  keep(prepared: PreparedCall): void {
    // All-to-all-v's counts are part of its shape, which the recipe does not compare.
    if (prepared.plan.shape.sendCounts !== undefined) return;
    this.recipes.unshift(recipeOf(prepared));
    if (this.recipes.length > RECIPES_KEPT) this.recipes.pop();
  }

  /** Forgets every recipe (the transport they were chosen for went away). */
  clear(): void {
    this.recipes.length = 0;
  }
}

/** Shapes of call a communicator keeps the choice of: more than a training step's kinds of call. */
export const RECIPES_KEPT = 16;
