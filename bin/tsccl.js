#!/usr/bin/env node
import { main } from '../dist/src/cli/main.js';

// A reader that stops early (`tsccl params | head -1`) closes the pipe: end quietly, as Unix
// tools do, instead of dying on an unhandled EPIPE.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
process.exitCode = await main(process.argv.slice(2));
