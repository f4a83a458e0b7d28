#!/usr/bin/env node
import { reportRefusal } from '../dist/src/cli/cli-error.js';

// A reader that stops early (`tsccl params | head -1`) closes the pipe: end quietly, as Unix
// tools do, instead of dying on an unhandled EPIPE.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
// The library reads its TSCCL_* settings as its modules load: a bad one is refused there, and
// reported as any refusal is, not as a crash with a stack.
const entry = await import('../dist/src/cli/main.js').catch((err) => ({ refused: reportRefusal(err) }));
process.exitCode = 'refused' in entry ? entry.refused : await entry.main(process.argv.slice(2));
