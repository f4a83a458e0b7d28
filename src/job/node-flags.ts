/** The Node flags of this process, which the ranks it starts inherit: its own (execArgv) and NODE_OPTIONS. */
export function inheritedNodeFlags(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
}
