import { z } from 'zod';
import { readJsonFile } from './json-file.js';
import type { ReplaySpan } from './trace-replay.js';

const TRACE_FILE = z.object({
  traceEvents: z.array(
    z
      .object({
        ph: z.string(),
        name: z.string(),
        cat: z.string().optional(),
        pid: z.number(),
        ts: z.number().optional(),
        dur: z.number().optional(),
        args: z.record(z.string(), z.unknown()).optional(),
      })
      .passthrough(),
  ),
});

/** A measured run's Chrome trace (`tsccl sim train --trace`), as tsccl/train's writeTrace writes it. */
export function readTraceFile(path: string): { traceEvents: ReplaySpan[] } {
  return readJsonFile(path, TRACE_FILE, '--trace', "a Chrome trace that tsccl/train's writeTrace wrote");
}
