import type { Communicator } from '../comm/communicator.js';
import { type InitOptions as InlineInitOptions, init as initInline } from '../comm/init.js';
import { paramInt } from '../config/params.js';
import { checkOptions } from '../comm/call-options.js';
import { EngineCommunicator } from './engine-communicator.js';

export interface InitOptions extends InlineInitOptions {
  /**
   * Who moves this rank's calls: 'inline' (default), the rank's own thread whenever it is inside
   * tsccl or idle; 'engine', a progress engine thread of the rank's own, so calls move while the
   * rank computes (docs/ARCHITECTURE.md, "Progress engine").
   */
  progress?: 'inline' | 'engine';
}

let engineWorld: Promise<EngineCommunicator> | undefined;

/**
 * The world communicator of this rank (see comm/init.ts for where rank and size come from);
 * with `progress: 'engine'`, one whose calls a progress engine runs. Calling it again returns
 * the same one.
 */
export function init(options: InitOptions & { progress: 'engine' }): Promise<EngineCommunicator>;
export function init(options?: InitOptions): Promise<Communicator>;
export function init(options: InitOptions = {}): Promise<Communicator | EngineCommunicator> {
  let timeoutMs: number;
  try {
    ({ timeoutMs } = checkOptions('init', options, { defaultTimeoutMs: paramInt('TSCCL_TIMEOUT_MS') }));
  } catch (err) {
    return Promise.reject(err);
  }
  const { progress, ...rest } = options;
  if (progress !== 'engine') return initInline(rest);
  engineWorld ??= EngineCommunicator.start(timeoutMs);
  return engineWorld;
}
