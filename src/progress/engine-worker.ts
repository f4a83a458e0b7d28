import { parentPort, workerData } from 'node:worker_threads';
import type { ShrinkOptions, SplitOptions } from '../comm/call-options.js';
import type { Communicator } from '../comm/communicator.js';
import { openWorld } from '../comm/init.js';
import { allocatedDTypes } from '../comm/validate.js';
import { dumpFlightRecords } from '../debug/flight-recorder.js';
import { type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { serializeError } from '../errors.js';
import type { Arena } from '../memory/arena.js';
import { announceExits, closeLiveTransports } from '../transport/tcp/tcp-transport.js';
import type { ArenaBuffer, EngineCommInfo, FromEngine, ToEngine } from './engine-protocol.js';
import { type EngineData, markFinished, writeReply } from './engine-reply.js';

/**
 * A rank's progress engine: a thread that holds the rank's communicators and runs the calls the
 * rank posts, so they move (messages read, reduced and forwarded, sockets served) while the
 * rank's own thread computes. The rank waits for nothing but the completions posted back.
 */
const data = workerData as EngineData;
const port = parentPort!;
const comms = new Map<number, Communicator>();
const inFlight = new Map<number, AbortController>();
let nextComm = 0;
let arena: Arena;

const post = (message: FromEngine) => port.postMessage(message);

function describe(comm: Communicator): EngineCommInfo {
  const id = nextComm++;
  comms.set(id, comm);
  return {
    comm: id,
    rank: comm.rank,
    size: comm.size,
    name: comm.name,
    transportKind: comm.transportKind,
    groupFusionMaxBytes: comm.groupFusionMaxBytes,
  };
}

/** The rank's array, seen from here: the same arena bytes. */
function view(buffer: ArenaBuffer): TypedArray {
  const ctor = globalThis[buffer.ctor] as unknown as new (b: ArrayBufferLike, o: number, n: number) => TypedArray;
  const array = new ctor(arena.memory.buffer, buffer.byteOffset, buffer.length);
  if (buffer.dtype !== undefined) allocatedDTypes.set(array, dtypeInfo(buffer.dtype));
  return array;
}

function run(message: Extract<ToEngine, { kind: 'call' }>): Promise<EngineCommInfo | null | undefined> {
  const comm = comms.get(message.comm);
  if (comm === undefined) throw new Error(`no communicator #${message.comm} in the engine`);
  const controller = new AbortController();
  inFlight.set(message.id, controller);
  // Checked again by the communicator, as on an inline call; the types are what the rank's side checked.
  const options = { ...message.options, signal: controller.signal } as unknown as SplitOptions & ShrinkOptions;
  if (message.output !== undefined) Object.assign(options, { output: view(message.output) });
  const buffer = message.buffer === undefined ? undefined : view(message.buffer);
  switch (message.call) {
    case 'barrier':
      return comm.barrier(options).then(() => undefined);
    case 'send':
    case 'recv':
      return comm[message.call](buffer!, message.peer!, options).then(() => undefined);
    case 'split':
      return comm.split(options).then((child) => (child === null ? null : describe(child)));
    case 'shrink':
      return comm.shrink(options).then(describe);
    case 'sibling':
      return comm.sibling(String(message.options.label), { timeoutMs: options.timeoutMs }).then(describe);
    case 'destroy':
      return comm.destroy().then(() => undefined);
    default:
      return comm[message.call](buffer!, options).then(() => undefined);
  }
}

port.on('message', (message: ToEngine) => {
  switch (message.kind) {
    case 'call': {
      let running: Promise<EngineCommInfo | null | undefined>;
      try {
        running = run(message);
      } catch (err) {
        running = Promise.reject(err);
      }
      running.then(
        (comm) => {
          inFlight.delete(message.id);
          markFinished(data.engine.completions, message.id);
          post({ kind: 'done', id: message.id, comm });
        },
        (err: unknown) => {
          inFlight.delete(message.id);
          markFinished(data.engine.completions, message.id);
          post({ kind: 'failed', id: message.id, error: serializeError(err) });
        },
      );
      return;
    }
    case 'abortCall':
      inFlight.get(message.id)?.abort(new Error(message.reason));
      return;
    case 'abortComm':
      comms.get(message.comm)?.abort(message.reason);
      return;
    case 'dump':
      dumpFlightRecords(message.reason);
      return;
    case 'leave':
      void closeLiveTransports().then(
        () => post({ kind: 'done', id: message.id }),
        (err: unknown) => post({ kind: 'failed', id: message.id, error: serializeError(err) }),
      );
      return;
    case 'announceExit':
      announceExits();
      writeReply(data.engine.reply, message.reply, { value: true });
      return;
    case 'query': {
      const comm = comms.get(message.comm);
      try {
        if (comm === undefined) throw new Error(`no communicator #${message.comm} in the engine`);
        const { collective, bytes, options } = message.args ?? { collective: '', bytes: 0, options: {} };
        const value =
          message.what === 'predict'
            ? comm.predict(collective, bytes, options)
            : message.what === 'stats'
              ? comm.stats()
              : comm.flightRecords();
        writeReply(data.engine.reply, message.reply, { value });
      } catch (err) {
        writeReply(data.engine.reply, message.reply, { error: serializeError(err) });
      }
      return;
    }
  }
});

try {
  const world = await openWorld({ defaultTimeoutMs: data.engine.defaultTimeoutMs, busyThreadsPerRank: 2 });
  arena = world.arena;
  post({ kind: 'ready', memory: arena.memory, world: describe(world.comm) });
} catch (err) {
  post({ kind: 'startFailed', error: serializeError(err) });
}
