import type { Schedule } from '../algorithms/schedule.js';

export const STEP_SEND = 0;
export const STEP_RECV = 1;
export const STEP_LOCAL = 2;
/** A receive that reduces into the destination: free on GPUs (fused), computed on CPU ranks. */
export const STEP_RECV_REDUCE = 3;

/**
 * One channel of one rank's schedule in the form the simulator walks: step kind, peer and bytes
 * in typed arrays. A transfer's bytes are its payload; so are a local step's (the bytes it
 * writes), whose `peers` entry is instead how many sources it reads, so that the simulator can
 * price it as memory traffic (a GPU's bandwidth counts reads and writes) or as a CPU core's
 * measured copy and reduction speeds (which count the bytes written). Thousands of ranks'
 * schedules fit in memory this way; the Step objects are dropped as soon as they are converted.
 */
export interface Program {
  readonly kinds: Uint8Array;
  readonly peers: Int32Array;
  readonly bytes: Float64Array;
}

export function programsOf(schedule: Schedule, elementBytes: number): Program[] {
  return schedule.channels.map((steps) => {
    const kinds = new Uint8Array(steps.length);
    const peers = new Int32Array(steps.length);
    const bytes = new Float64Array(steps.length);
    steps.forEach((step, i) => {
      switch (step.kind) {
        case 'send': kinds[i] = STEP_SEND; peers[i] = step.peer; bytes[i] = step.src.count * elementBytes; break;
        case 'recv': kinds[i] = STEP_RECV; peers[i] = step.peer; bytes[i] = step.dst.count * elementBytes; break;
        case 'recvReduce': kinds[i] = STEP_RECV_REDUCE; peers[i] = step.peer; bytes[i] = step.dst.count * elementBytes; break;
        case 'copy': kinds[i] = STEP_LOCAL; peers[i] = 1; bytes[i] = step.dst.count * elementBytes; break;
        case 'reduce': kinds[i] = STEP_LOCAL; peers[i] = step.srcs.length; bytes[i] = step.dst.count * elementBytes; break;
      }
    });
    return { kinds, peers, bytes };
  });
}
