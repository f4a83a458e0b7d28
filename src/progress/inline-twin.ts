import type { Collective } from '../algorithms/schedule.js';
import { Communicator } from '../comm/communicator.js';
import { joinProcesses, processOfRanks } from '../comm/mixed-world.js';
import { ShmBackend, allocateMailbox } from '../comm/shm-backend.js';
import { connectTcpWorld } from '../comm/tcp-world.js';
import { adoptThreadWorldChoices } from '../comm/thread-choices.js';
import { warmUp } from '../comm/warm-up.js';
import { paramInt } from '../config/params.js';
import { ErrorCode, TscclError } from '../errors.js';
import { type ThreadRankBootstrap, threadRankBootstrap } from '../job/bootstrap.js';
import { jobFromEnv } from '../job/env-job.js';
import { log } from '../log.js';
import type { Arena } from '../memory/arena.js';
import { median } from '../tune/median.js';
import { engineMinBytes } from '../tuner/progress-choice.js';

/**
 * The rank's own communicator beside one its engine holds, over the same ranks, for the calls
 * `progress: 'auto'` runs inline: those too short for the engine's hand-off to pay.
 */
export interface InlineTwin {
  readonly comm: Communicator;
  /** Per collective, the smallest call that goes to the engine (tuner/progress-choice.ts). */
  readonly engineMinBytes: ReadonlyMap<Collective, number>;
  /** What the engine adds to a call, us, as every rank of the world agreed. */
  readonly handOffUs: number;
}

/** What opening a twin needs of the engine's communicator: its place, and calls run on the engine. */
export interface EngineSide {
  readonly rank: number;
  readonly size: number;
  readonly name: string;
  readonly arena: Arena;
  readonly defaultTimeoutMs: number;
  readonly transportKind: 'shm' | 'tcp';
  /**
   * A communicator of the same ranks on the engine whose calls leave the engine's numbering and
   * records alone: the twin's own setup runs there, so the user's first call is #1.
   */
  siblingOnEngine(label: string): Promise<EngineSibling>;
}

/** The calls the twin's setup makes on the engine. */
export interface EngineSibling {
  allGather(input: Int32Array, options: { output: Int32Array }): Promise<void>;
  allReduce(buffer: Float32Array): Promise<void>;
  destroy(): Promise<void>;
}

/** The engine's sibling for a twin's setup, made on first use (every rank needs it at the same step) and destroyed after. */
class SetupSibling {
  private made: Promise<EngineSibling> | undefined;
  private readonly side: EngineSide;

  constructor(side: EngineSide) {
    this.side = side;
  }

  get(): Promise<EngineSibling> {
    this.made ??= this.side.siblingOnEngine('inline-setup');
    return this.made;
  }

  async destroy(): Promise<void> {
    if (this.made !== undefined) await (await this.made).destroy();
  }
}

/**
 * Rounds of the hand-off measurement: a small all-reduce on the engine, then the same inline. The
 * first ones run while V8 still compiles the engine's path, 2-30x slower than the rest (docs/tuning.md),
 * so they are run and not counted.
 */
const HAND_OFF_UNCOUNTED_ROUNDS = 24;
const HAND_OFF_ROUNDS = 32;

/**
 * Whether this rank can run calls inline beside its engine: thread ranks of one process (their
 * mailboxes live in the shared arena both threads see), process ranks (a second TCP mesh,
 * served by the rank's own event loop), and threads of several processes (both at once).
 */
export function twinSupported(transportKind: 'shm' | 'tcp'): boolean {
  const boot = threadRankBootstrap();
  if (transportKind === 'shm') return boot !== undefined && boot.global === undefined;
  return boot === undefined ? jobFromEnv() !== undefined : boot.global !== undefined;
}

/**
 * Opens the twin of `side`'s communicator. A world's twin is made here (thread ranks: each rank
 * allocates a mailbox in the arena and the engine all-gathers their places, with each rank's job
 * rank, which failure detection names; process ranks: a TCP mesh of its own through the job's
 * store), warms up as init does, and measures the hand-off (unless TSCCL_ENGINE_HANDOFF_US gives
 * it). A split's or shrink's twin takes its parent's hand-off; on thread ranks it is made the
 * same way; on process ranks it is `mirrored`, the parent twin's own split or shrink.
 */
export async function openInlineTwin(
  side: EngineSide,
  parent?: { readonly handOffUs: number; readonly mirrored: Communicator | undefined },
): Promise<InlineTwin> {
  const setup = new SetupSibling(side);
  try {
    return await openWith(side, setup, parent);
  } finally {
    await setup.destroy();
  }
}

async function openWith(
  side: EngineSide,
  setup: SetupSibling,
  parent: { readonly handOffUs: number; readonly mirrored: Communicator | undefined } | undefined,
): Promise<InlineTwin> {
  const name = `${side.name}/inline`;
  let comm: Communicator;
  const boot = threadRankBootstrap();
  if (side.transportKind === 'shm') comm = await shmTwin(side, await setup.get(), name, parent === undefined);
  else if (parent === undefined && boot?.global !== undefined)
    comm = await mixedTwin(side, await setup.get(), name, boot);
  else if (parent === undefined) {
    const backend = await connectTcpWorld(jobFromEnv()!, {
      rank: side.rank,
      size: side.size,
      arena: side.arena,
      defaultTimeoutMs: side.defaultTimeoutMs,
      name,
      serveStore: false,
    });
    comm = new Communicator({ arena: side.arena, backend, name, defaultTimeoutMs: side.defaultTimeoutMs });
  } else {
    if (parent.mirrored === undefined)
      throw new TscclError(
        ErrorCode.INTERNAL,
        `${name}: the inline twin's split left rank ${side.rank} out, the engine's did not`,
      );
    comm = parent.mirrored;
  }
  const { rank, size } = side;
  let agreed = parent?.handOffUs;
  if (agreed === undefined) {
    await warmUp(comm);
    agreed = paramInt('TSCCL_ENGINE_HANDOFF_US') || (await measureHandOff(side, await setup.get(), comm));
  }
  const limits = engineMinBytes((collective, bytes) => comm.predict(collective, bytes).timeUs, agreed, size);
  log(
    'INFO',
    () =>
      `${side.name} rank ${rank}: progress 'auto', hand-off ${agreed.toFixed(1)} us, calls inline below ${[...limits].map(([c, b]) => `${c} ${b} B`).join(', ')}`,
  );
  return { comm, engineMinBytes: limits, handOffUs: agreed };
}

/**
 * Allocates this rank's twin mailbox (for `maxRanks` ranks) and all-gathers every rank's place
 * and job rank on the engine (`places`: the pair of rank r at 2r); the mailbox goes back if that fails.
 */
async function gatherMailboxes(
  side: EngineSide,
  engine: EngineSibling,
  maxRanks: number,
  jobRank: number,
): Promise<Int32Array> {
  const mailbox = allocateMailbox(side.arena, maxRanks);
  const places = new Int32Array(2 * side.size);
  try {
    await engine.allGather(Int32Array.of(mailbox, jobRank), { output: places });
  } catch (err) {
    side.arena.free(mailbox);
    throw err;
  }
  return places;
}

/** Shared memory between `members` (ranks of the communicator, this one the `index`-th) over their gathered mailboxes. */
function shmOver(
  arena: Arena,
  places: Int32Array,
  members: readonly number[],
  index: number,
  boot: ThreadRankBootstrap,
): ShmBackend {
  return new ShmBackend(
    arena,
    index,
    members.map((r) => places[2 * r]),
    // The rank threads of this process and their engines.
    boot.size * 2,
    members.map((r) => places[2 * r + 1]),
  );
}

/** A thread rank's twin: a mailbox of its own per rank, their places all-gathered by the engine. */
async function shmTwin(side: EngineSide, engine: EngineSibling, name: string, world: boolean): Promise<Communicator> {
  const boot = threadRankBootstrap()!;
  const { arena, rank, size } = side;
  const places = await gatherMailboxes(side, engine, size, boot.rank);
  if (world) adoptThreadWorldChoices(boot.size, boot.choices);
  const everyRank = Array.from({ length: size }, (_, r) => r);
  const backend = shmOver(arena, places, everyRank, rank, boot);
  return new Communicator({ arena, backend, name, defaultTimeoutMs: side.defaultTimeoutMs });
}

/**
 * The twin of threads of several processes, built as their world is: a mailbox per rank in this
 * process's arena (their places all-gathered by the engine, each process keeping its own
 * threads'), and a TCP mesh of its own between the processes, served by the rank's event loop.
 */
async function mixedTwin(
  side: EngineSide,
  engine: EngineSibling,
  name: string,
  boot: ThreadRankBootstrap,
): Promise<Communicator> {
  const global = boot.global!;
  const { arena, rank } = side;
  const places = await gatherMailboxes(side, engine, boot.size, rank);
  const processOf = processOfRanks(global);
  const local = processOf.flatMap((p, r) => (p === processOf[rank] ? [r] : []));
  const shm = shmOver(arena, places, local, boot.rank, boot);
  try {
    const backend = await joinProcesses(shm, global, {
      rank,
      arena,
      defaultTimeoutMs: side.defaultTimeoutMs,
      name,
      serveStore: false,
    });
    return new Communicator({ arena, backend, name, defaultTimeoutMs: side.defaultTimeoutMs });
  } catch (err) {
    await shm.close();
    throw err;
  }
}

/**
 * What the engine adds to a small all-reduce over running it inline (medians of
 * HAND_OFF_ROUNDS, us), the largest of any rank: every rank cuts its calls with the same figure.
 */
async function measureHandOff(side: EngineSide, engine: EngineSibling, twin: Communicator): Promise<number> {
  // On siblings of both, as init's warm-up: the user's own calls and records start at #1 on each.
  const comm = await twin.sibling('handoff');
  const onEngine = side.arena.allocateOwned(Float32Array, 2, 4) as Float32Array;
  const inline = new Float32Array(2);
  const engineUs: number[] = [];
  const inlineUs: number[] = [];
  try {
    for (let round = 0; round < HAND_OFF_UNCOUNTED_ROUNDS + HAND_OFF_ROUNDS; round++) {
      let started = performance.now();
      await engine.allReduce(onEngine);
      const engineRound = (performance.now() - started) * 1000;
      started = performance.now();
      await comm.allReduce(inline);
      const inlineRound = (performance.now() - started) * 1000;
      if (round < HAND_OFF_UNCOUNTED_ROUNDS) continue;
      engineUs.push(engineRound);
      inlineUs.push(inlineRound);
    }
    const mine = new Float64Array([Math.max(1, median(engineUs) - median(inlineUs))]);
    await comm.allReduce(mine, { op: 'max' });
    return mine[0];
  } finally {
    side.arena.release(onEngine);
    await comm.destroy();
  }
}
