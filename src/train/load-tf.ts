import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import type * as TfNamespace from '@tensorflow/tfjs';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';

/** The TensorFlow.js namespace tsccl/train works with. */
export type Tf = typeof TfNamespace;

/**
 * 'wasm' (default): XNNPACK kernels with SIMD, one thread per rank; 'cpu': plain JavaScript
 * kernels, several times slower (bench/train/backends.mjs).
 */
export type TrainBackend = 'wasm' | 'cpu';

export interface LoadTfOptions {
  backend?: TrainBackend;
}

const BACKENDS: readonly TrainBackend[] = ['wasm', 'cpu'];

/**
 * TensorFlow.js on the chosen backend, ready to use. TensorFlow.js is an optional peer
 * dependency: the core library never loads it, and this refuses with TSCCL_ERR_UNAVAILABLE,
 * naming the packages to install, where it is missing.
 */
export async function loadTf(options: LoadTfOptions = {}): Promise<Tf> {
  const backend = options.backend ?? 'wasm';
  if (!BACKENDS.includes(backend)) {
    throw invalidArgument(`loadTf: backend must be one of ${BACKENDS.join(', ')}, got ${String(backend)}`, {
      argument: 'backend',
    });
  }
  const tf = await importOptional<Tf>('@tensorflow/tfjs');
  if (backend === 'wasm') {
    const wasm = await importOptional<{ setWasmPaths(prefix: string): void }>('@tensorflow/tfjs-backend-wasm');
    // The .wasm files ship in the package's dist/; Node cannot fetch them by URL as a browser would.
    const packageDir = dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/package.json'));
    wasm.setWasmPaths(join(packageDir, 'dist') + sep);
  }
  if (!(await tf.setBackend(backend))) {
    throw new TscclError(ErrorCode.UNAVAILABLE, `loadTf: the TensorFlow.js '${backend}' backend failed to start`, {
      argument: 'backend',
    });
  }
  await tf.ready();
  return tf;
}

async function importOptional<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new TscclError(
      ErrorCode.UNAVAILABLE,
      `tsccl/train needs ${name}, an optional peer dependency: npm install @tensorflow/tfjs@4 @tensorflow/tfjs-backend-wasm@4`,
      { argument: name },
    );
  }
}
