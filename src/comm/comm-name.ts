/**
 * The name of a communicator made from `parent` (by split or shrink): the parent's name and a
 * step. A step repeated at the end is counted, not written again, so a job that shrinks after
 * every failure gets `world.shrink1*40`, not forty segments. Names key each communicator's
 * rendezvous in the job's store, so they stay unique: no step contains `*`, and the count
 * always follows a whole step.
 */
export function childName(parent: string, step: string): string {
  const suffix = `.${step}`;
  if (parent.endsWith(suffix)) return `${parent}*2`;
  const counted = new RegExp(`\\.${step.replace(/\./g, '\\.')}\\*(\\d+)$`).exec(parent);
  if (counted !== null) return `${parent.slice(0, counted.index)}${suffix}*${Number(counted[1]) + 1}`;
  return `${parent}${suffix}`;
}
