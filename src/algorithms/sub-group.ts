import type { Schedule, Step } from './schedule.js';

/**
 * A schedule of a group of ranks (`members`, the group's ranks by their ranks in the whole
 * communicator) with its peers renamed to those ranks: what a rank runs when a call moves data
 * among some of the communicator's ranks only (a host's ranks, or one rank of each host).
 */
export function onMembers(schedule: Schedule, members: readonly number[]): Schedule {
  const rename = (step: Step): Step => ('peer' in step ? { ...step, peer: members[step.peer] } : step);
  return { ...schedule, rank: members[schedule.rank], channels: schedule.channels.map((steps) => steps.map(rename)) };
}
