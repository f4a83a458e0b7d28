import type { PlanRequest } from '../../src/comm/call-plan.js';

/** A plan request; the keys a test leaves out are undefined, as the communicator's requests set them. */
export function planRequest(
  fields: Omit<PlanRequest, 'op' | 'compression' | 'variable'> & Partial<PlanRequest>,
): PlanRequest {
  return { op: undefined, compression: undefined, variable: undefined, ...fields };
}
