import { Worker, isMainThread, workerData } from 'node:worker_threads';

/**
 * `tsccl sim` runs the flow engine in a worker thread with a large young generation: a flow simulation makes
 * millions of short-lived objects (events, messages, flows), and with V8's default new space
 * most of its time went to scavenges (a 512-rank ring: 14 s -> 9 s with 192 MB). The worker
 * runs the same command line; its output is the command's output. The analytical model
 * makes few objects and runs in the calling thread: starting the worker and loading the modules
 * a second time cost 0.2 s, a fifth of its budget for 100,000 ranks.
 */
const YOUNG_GENERATION_MB = 192;

export interface SimWorkerData {
  readonly tscclSimArgv: string[];
  /** A worker's stderr is a pipe to the main thread: whether that one's is a terminal. */
  readonly stderrIsTTY: boolean;
}

/** Whether the command's stderr is a terminal (the main thread's, from a worker). */
export function stderrIsTerminal(): boolean {
  return inSimWorker() ? (workerData as SimWorkerData).stderrIsTTY : process.stderr.isTTY === true;
}

export function inSimWorker(): boolean {
  return !isMainThread && (workerData as Partial<SimWorkerData> | null)?.tscclSimArgv !== undefined;
}

export async function runSimInWorker(argv: string[]): Promise<number> {
  const worker = new Worker(new URL('./sim-worker-entry.js', import.meta.url), {
    workerData: { tscclSimArgv: argv, stderrIsTTY: process.stderr.isTTY === true } satisfies SimWorkerData,
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
  let code = 1;
  worker.on('message', (exitCode: number) => {
    code = exitCode;
  });
  await new Promise<void>((resolve, reject) => {
    worker.on('error', reject);
    worker.on('exit', () => resolve());
  });
  return code;
}
