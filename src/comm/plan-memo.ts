import { type CallPlan, type PlanRequest, type PlanSite, planCall } from './call-plan.js';

/**
 * The last plan of a communicator and the arguments it was made from: a call with the same ones
 * (same buffers, lengths, size, op, algorithm) reuses it, so a stream of small calls checks once.
 * Calls with variable blocks are planned afresh every time.
 */
export class PlanMemo {
  private lastPlan: CallPlan | undefined;
  /**
   * The last plan's arguments, copied field by field into this one object (callers may refill
   * one request object for every call): a copy per call was garbage on every call on a fresh array.
   */
  private readonly lastRequest: { -readonly [K in keyof PlanRequest]: PlanRequest[K] } = {
    collective: 'allReduce',
    dtype: undefined as unknown as PlanRequest['dtype'],
    op: undefined,
    count: 0,
    root: 0,
    input: undefined as unknown as PlanRequest['input'],
    output: undefined,
    algorithm: undefined,
    compression: undefined,
    variable: undefined,
  };
  private lastInputLength = 0;
  private lastOutputLength = 0;

  private readonly site: PlanSite;

  constructor(site: PlanSite) {
    this.site = site;
  }

  plan(request: PlanRequest): CallPlan {
    const last = this.lastPlan;
    if (
      last !== undefined &&
      request.variable === undefined &&
      sameCall(this.lastRequest, request) &&
      this.lastInputLength === request.input.length &&
      this.lastOutputLength === outputLength(request)
    ) {
      return last;
    }
    const plan = planCall(request, this.site);
    if (request.variable === undefined) this.keep(plan, request);
    return plan;
  }

  /** A plan made without touching the memo (a call the library issues itself). */
  planUncached(request: PlanRequest): CallPlan {
    return planCall(request, this.site);
  }

  /** Lets go of the last call's buffers. */
  forget(): void {
    this.lastPlan = undefined;
    this.lastRequest.input = undefined as unknown as PlanRequest['input'];
    this.lastRequest.output = undefined;
    this.lastRequest.compression = undefined;
  }

  private keep(plan: CallPlan, request: PlanRequest): void {
    const kept = this.lastRequest;
    kept.collective = request.collective;
    kept.dtype = request.dtype;
    kept.op = request.op;
    kept.count = request.count;
    kept.root = request.root;
    kept.input = request.input;
    kept.output = request.output;
    kept.algorithm = request.algorithm;
    kept.compression = request.compression;
    this.lastPlan = plan;
    this.lastInputLength = request.input.length;
    this.lastOutputLength = outputLength(request);
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
