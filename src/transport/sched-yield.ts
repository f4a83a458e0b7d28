import { createRequire } from 'node:module';
import { SCHED_YIELD_WASM } from './sched-yield-wasm.js';

/**
 * sched_yield(2) for the calling thread: the core goes to another runnable thread, if there is
 * one, and comes back at once if not. JavaScript has no such call; WASI (node:wasi) does, so a
 * 118-byte module that imports it is instantiated once per thread. The call returns WASI's
 * errno (0: done). undefined where the runtime has no WASI.
 *
 * Why ranks want it: with more ranks than cores, a rank that sleeps until a peer wakes it pays a
 * wake-up per hand-off (a futex for thread ranks, epoll for process ranks), and on this VM a core
 * left idle halts its virtual CPU, so the wake-up costs tens to hundreds of us. Open MPI's
 * oversubscribed ranks poll and call sched_yield (mpi_yield_when_idle); a tsccl rank does the
 * same while it spins (thread ranks) or polls its sockets (process ranks).
 */
export function coreYield(): (() => number) | undefined {
  if (loaded === undefined) loaded = { yieldCore: load() };
  return loaded.yieldCore;
}

let loaded: { yieldCore: (() => number) | undefined } | undefined;

function load(): (() => number) | undefined {
  try {
    const { WASI } = loadWasiQuietly();
    const wasi = new WASI({ version: 'preview1' });
    const instance = new WebAssembly.Instance(
      new WebAssembly.Module(Buffer.from(SCHED_YIELD_WASM, 'base64')),
      wasi.getImportObject() as Record<string, Record<string, () => number>>,
    );
    wasi.initialize(instance);
    return instance.exports.yield_core as () => number;
  } catch {
    return undefined;
  }
}

/**
 * node:wasi announces itself as experimental on load; tsccl's user did not ask for WASI, so that
 * one warning is dropped (every other warning passes).
 */
function loadWasiQuietly(): typeof import('node:wasi') {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (!String(warning).includes('WASI'))
      (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return createRequire(import.meta.url)('node:wasi') as typeof import('node:wasi');
  } finally {
    process.emitWarning = emitWarning;
  }
}
