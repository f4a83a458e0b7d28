import type { Communicator } from '../comm/communicator.js';
import { type InitOptions as InlineInitOptions, init as initInline } from '../comm/init.js';
import { paramInt } from '../config/params.js';
import { checkOptions } from '../comm/call-options.js';
import { EngineCommunicator } from './engine-communicator.js';

export interface InitOptions extends InlineInitOptions {
  /**
   * Who moves this rank's calls: 'inline' (default), the rank's own thread whenever it is inside
   * tsccl or idle; 'engine', a progress engine thread of the rank's own, so calls move while the
   * rank computes (docs/ARCHITECTURE.md, "Progress engine"); 'auto', an engine for the calls
   * long enough to hide, while calls shorter than the engine's hand-off run on the rank's own
   * thread (thread ranks over mailboxes of their own, process ranks over a second TCP mesh,
   * threads of several processes over both).
   */
  progress?: 'inline' | 'engine' | 'auto';
}

let engineWorld: Promise<EngineCommunicator> | undefined;

/**
 * The world communicator of this rank (see comm/init.ts for where rank and size come from);
 * with `progress: 'engine'` or `'auto'`, one whose calls a progress engine runs (all, or those
 * the tuner sends it). Calling it again returns the same one.
 */
export function init(options: InitOptions & { progress: 'engine' | 'auto' }): Promise<EngineCommunicator>;
export function init(options?: InitOptions): Promise<Communicator>;
export function init(options: InitOptions = {}): Promise<Communicator | EngineCommunicator> {
  let timeoutMs: number;
  try {
    ({ timeoutMs } = checkOptions('init', options, { defaultTimeoutMs: paramInt('TSCCL_TIMEOUT_MS') }));
  } catch (err) {
    return Promise.reject(err);
  }
  const { progress, ...rest } = options;
  if (progress !== 'engine' && progress !== 'auto') return initInline(rest);
  engineWorld ??= EngineCommunicator.start(timeoutMs, progress);
  return engineWorld;
}
