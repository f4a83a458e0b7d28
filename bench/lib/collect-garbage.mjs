// A finished job of thread ranks leaves its arena (a shared WebAssembly.Memory the launching
// thread created) to the launcher's garbage collector, and V8 does not count that memory as
// pressure on the launcher's heap: an 8-rank 64 MiB all-gather held 1.1 GB per launch until a
// collection ran (1107, 2137, 3163 MiB after three launches), and bench/predict-local.mjs,
// which launches a job per size, op and rank count three times over, was killed by the kernel
// at 24 GB. Benchmarks that launch many jobs collect after each. Node exposes the collector
// only behind a flag; a benchmark may set it, the library does not.
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

/** Returns the memory of finished thread-rank jobs (1108 -> 83 MiB after the same launch). */
export function collectGarbage() {
  gc();
}
