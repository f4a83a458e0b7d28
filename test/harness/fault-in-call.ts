import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { mark } from './marks.js';

/**
 * Drives a two-rank job of test/fixtures/flap-rank.js: once both ranks printed FLAP-READY it
 * marks 'go', and once both marked that their call started it runs `fault` (if any) once, so the
 * fault lands inside the call. `onOutput(node)` watches that node's output.
 */
export function faultInCall(
  marks: string,
  fault?: () => void,
): { onOutput: (node: number) => (text: string) => void; injected: () => boolean } {
  const ready = new Set<number>();
  let injected = false;
  const onOutput = (node: number) => (text: string) => {
    if (text.includes('FLAP-READY')) ready.add(node);
    if (ready.size < 2 || existsSync(join(marks, 'go'))) return;
    mark(marks, 'go');
    const calling = setInterval(() => {
      if (injected || !existsSync(join(marks, 'calling-0')) || !existsSync(join(marks, 'calling-1'))) return;
      injected = true;
      clearInterval(calling);
      fault?.();
    }, 5);
  };
  return { onOutput, injected: () => injected };
}
