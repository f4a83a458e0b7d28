import { localMachine } from '../sim/machine-cost.js';
import { LL_SLOT_BYTES } from '../transport/shm/mailbox.js';
import { isOversubscribed } from '../transport/wait.js';
import { type ChoiceTable, adoptChoices, choiceTable, prepareChoices } from '../tuner/select.js';

/**
 * Ranks every size class for a communicator of `size` thread ranks: the cost model runs here,
 * when a communicator is created, never inside a call. Classes already ranked (or adopted) cost
 * a lookup.
 */
export function prepareThreadChoices(
  size: number,
  backend: { readonly oversubscribed: boolean; readonly oneShotCapacity: number | undefined },
): void {
  prepareChoices(localMachine(size, 'shm').graph, {
    nranks: size,
    transport: 'shm',
    oversubscribed: backend.oversubscribed,
    oneShotCapacity: backend.oneShotCapacity,
  });
}

/**
 * The table for a world of `size` thread ranks, ranked once by the thread that starts them and
 * handed to each, so that n ranks do not each simulate the same classes.
 */
export function threadWorldChoices(size: number): ChoiceTable | undefined {
  if (size < 2) return undefined;
  // What the world's ShmBackend will have: every rank of the process is one of these threads.
  prepareThreadChoices(size, { oversubscribed: isOversubscribed(size), oneShotCapacity: LL_SLOT_BYTES });
  return choiceTable(localMachine(size, 'shm').graph);
}

/** Takes the table the starting thread ranked, where it modelled this rank's machine. */
export function adoptThreadWorldChoices(size: number, table: ChoiceTable | undefined): void {
  if (table !== undefined) adoptChoices(localMachine(size, 'shm').graph, table);
}
