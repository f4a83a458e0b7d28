import { type CallPlan, type PlanRequest, type PlanSite, planCall } from './call-plan.js';

/**
 * The last plan of a communicator and the arguments it was made from: a call with the same ones
 * (same buffers, lengths, size, op, algorithm) reuses it, so a stream of small calls checks once.
 * Calls with variable blocks are planned afresh every time.
 */
export class PlanMemo {
  private last: { plan: CallPlan; request: PlanRequest; inputLength: number; outputLength: number } | undefined;

  private readonly site: PlanSite;

  constructor(site: PlanSite) {
    this.site = site;
  }

  plan(request: PlanRequest): CallPlan {
    const last = this.last;
    if (
      last !== undefined &&
      request.variable === undefined &&
      sameCall(last.request, request) &&
      last.inputLength === request.input.length &&
      last.outputLength === outputLength(request)
    ) {
      return last.plan;
    }
    const plan = planCall(request, this.site);
    // A copy: callers may refill one request object for every call.
    if (request.variable === undefined)
      this.last = {
        plan,
        request: { ...request },
        inputLength: request.input.length,
        outputLength: outputLength(request),
      };
    return plan;
  }

  /** A plan made without touching the memo (a call the library issues itself). */
  planUncached(request: PlanRequest): CallPlan {
    return planCall(request, this.site);
  }

  /** Lets go of the last call's buffers. */
  forget(): void {
    this.last = undefined;
  }
}

/** The output's length, -1 in place: always a small integer, which V8 compiles the comparison for. */
function outputLength(request: PlanRequest): number {
  return request.output === undefined ? -1 : request.output.length;
}

function sameCall(a: PlanRequest, b: PlanRequest): boolean {
  return (
    a.input === b.input &&
    a.output === b.output &&
    a.op === b.op &&
    a.collective === b.collective &&
    a.dtype === b.dtype &&
    a.count === b.count &&
    a.root === b.root &&
    a.algorithm === b.algorithm &&
    a.compression?.format === b.compression?.format &&
    a.compression?.blockSize === b.compression?.blockSize &&
    a.compression?.shadow === b.compression?.shadow &&
    a.compression?.residual === b.compression?.residual
  );
}
