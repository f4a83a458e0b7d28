#!/usr/bin/env node
// Writes the project's WebAssembly text and assembles it with wabt into TypeScript files of
// bytes (base64, committed so nothing assembles at run time):
//   src/kernels/reduce-simd.wat -> reduce-simd-wasm.ts: the reduction kernels, one loop template
//     per type and operation;
//   scripts/codec-simd-wat.mjs -> src/kernels/codec-simd.wat, codec-simd-wasm.ts: the compression
//     codecs (int8, int4, bf16, fp16);
//   src/transport/sched-yield.wat -> sched-yield-wasm.ts: WASI's sched_yield, which ranks that
//     outnumber the cores call to give their core away while they wait.
// `--check` fails if the committed files differ from what this script produces, so the bytes
// always match the source.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabtInit from 'wabt';
import { codecWat } from './codec-simd-wat.mjs';

// lanes: elements per v128; vec: the vector op per reduction (null: scalar only); scalar ops take
// two values already on the stack ($x, $y in locals) and leave the result.
const TYPES = {
  f32: {
    bytes: 4,
    lanes: 4,
    load: 'f32.load',
    store: 'f32.store',
    local: 'f32',
    vec: { sum: 'f32x4.add', prod: 'f32x4.mul', min: 'f32x4.min', max: 'f32x4.max' },
    op: { sum: 'f32.add', prod: 'f32.mul', min: 'f32.min', max: 'f32.max' },
  },
  f64: {
    bytes: 8,
    lanes: 2,
    load: 'f64.load',
    store: 'f64.store',
    local: 'f64',
    vec: { sum: 'f64x2.add', prod: 'f64x2.mul', min: 'f64x2.min', max: 'f64x2.max' },
    op: { sum: 'f64.add', prod: 'f64.mul', min: 'f64.min', max: 'f64.max' },
  },
  i32: {
    bytes: 4,
    lanes: 4,
    load: 'i32.load',
    store: 'i32.store',
    local: 'i32',
    vec: { sum: 'i32x4.add', prod: 'i32x4.mul', min: 'i32x4.min_s', max: 'i32x4.max_s' },
    op: { sum: 'i32.add', prod: 'i32.mul', min: ['i32.lt_s'], max: ['i32.gt_s'] },
  },
  u32: {
    bytes: 4,
    lanes: 4,
    load: 'i32.load',
    store: 'i32.store',
    local: 'i32',
    vec: { sum: 'i32x4.add', prod: 'i32x4.mul', min: 'i32x4.min_u', max: 'i32x4.max_u' },
    op: { sum: 'i32.add', prod: 'i32.mul', min: ['i32.lt_u'], max: ['i32.gt_u'] },
  },
  i8: {
    bytes: 1,
    lanes: 16,
    load: 'i32.load8_s',
    store: 'i32.store8',
    local: 'i32',
    vec: { sum: 'i8x16.add', prod: null, min: 'i8x16.min_s', max: 'i8x16.max_s' },
    op: { sum: 'i32.add', prod: 'i32.mul', min: ['i32.lt_s'], max: ['i32.gt_s'] },
  },
  u8: {
    bytes: 1,
    lanes: 16,
    load: 'i32.load8_u',
    store: 'i32.store8',
    local: 'i32',
    vec: { sum: 'i8x16.add', prod: null, min: 'i8x16.min_u', max: 'i8x16.max_u' },
    op: { sum: 'i32.add', prod: 'i32.mul', min: ['i32.lt_u'], max: ['i32.gt_u'] },
  },
  i64: {
    bytes: 8,
    lanes: 2,
    load: 'i64.load',
    store: 'i64.store',
    local: 'i64',
    vec: { sum: 'i64x2.add', prod: 'i64x2.mul', min: ['i64x2.lt_s'], max: ['i64x2.gt_s'] },
    op: { sum: 'i64.add', prod: 'i64.mul', min: ['i64.lt_s'], max: ['i64.gt_s'] },
  },
  u64: {
    bytes: 8,
    lanes: 2,
    load: 'i64.load',
    store: 'i64.store',
    local: 'i64',
    vec: { sum: 'i64x2.add', prod: 'i64x2.mul', min: null, max: null },
    op: { sum: 'i64.add', prod: 'i64.mul', min: ['i64.lt_u'], max: ['i64.gt_u'] },
  },
};

/** `[compare]` means: keep $x where compare($x, $y) holds, else $y (a select). */
const apply = (op, x, y) => (Array.isArray(op) ? `(select ${x} ${y} (${op[0]} ${x} ${y}))` : `(${op} ${x} ${y})`);

function kernel(type, name) {
  const t = TYPES[type];
  const vec = t.vec[name];
  const vectorLoop =
    vec === null
      ? ''
      : `
    (block $vdone (loop $v
      (br_if $vdone (i32.gt_u (i32.add (local.get $i) (i32.const ${t.lanes})) (local.get $n)))
      (local.set $vx (v128.load (local.get $a)))
      (local.set $vy (v128.load (local.get $b)))
      (v128.store (local.get $d) ${apply(vec, '(local.get $vx)', '(local.get $vy)').replace(/\(select (.*) (.*) (\(.*\))\)$/, (_, x, y, c) => `(v128.bitselect ${x} ${y} ${c})`)})
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (local.set $a (i32.add (local.get $a) (i32.const 16)))
      (local.set $b (i32.add (local.get $b) (i32.const 16)))
      (local.set $i (i32.add (local.get $i) (i32.const ${t.lanes})))
      (br $v)))`;
  return `
  (func (export "${type}_${name}") (param $d i32) (param $a i32) (param $b i32) (param $n i32)
    (local $i i32) (local $x ${t.local}) (local $y ${t.local}) (local $vx v128) (local $vy v128)${vectorLoop}
    (block $done (loop $s
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $x (${t.load} (local.get $a)))
      (local.set $y (${t.load} (local.get $b)))
      (${t.store} (local.get $d) ${apply(t.op[name], '(local.get $x)', '(local.get $y)')})
      (local.set $d (i32.add (local.get $d) (i32.const ${t.bytes})))
      (local.set $a (i32.add (local.get $a) (i32.const ${t.bytes})))
      (local.set $b (i32.add (local.get $b) (i32.const ${t.bytes})))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $s))))`;
}

/**
 * x[i] = x[i] / divisor in place, finishing an average. A float32 quotient rounded once equals
 * JavaScript's (a float64 quotient rounded to float32), as float64 holds over twice float32's bits.
 */
function divide(type) {
  const t = TYPES[type];
  return `
  (func (export "${type}_divide") (param $x i32) (param $n i32) (param $divisor ${t.local})
    (local $i i32) (local $v v128)
    (local.set $v (${type}x${t.lanes}.splat (local.get $divisor)))
    (block $vdone (loop $l
      (br_if $vdone (i32.gt_u (i32.add (local.get $i) (i32.const ${t.lanes})) (local.get $n)))
      (v128.store (local.get $x) (${type}x${t.lanes}.div (v128.load (local.get $x)) (local.get $v)))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $i (i32.add (local.get $i) (i32.const ${t.lanes})))
      (br $l)))
    (block $done (loop $s
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (${t.store} (local.get $x) (${type}.div (${t.load} (local.get $x)) (local.get $divisor)))
      (local.set $x (i32.add (local.get $x) (i32.const ${t.bytes})))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $s))))`;
}

const wat = `;; Generated by scripts/build-kernels.mjs: d[i] = a[i] (op) b[i] over the shared arena.
;; Byte offsets d, a, b; element count n. 16 bytes per step with SIMD, then a scalar tail.
;; Min and max propagate NaN (f32x4.min / f32.min), as the JS kernels do. f32_divide and
;; f64_divide divide n elements at x by a divisor in place (an average's last pass).
(module
  (memory (import "env" "memory") 1 65536 shared)${Object.keys(TYPES)
    .flatMap((type) => ['sum', 'prod', 'min', 'max'].map((op) => kernel(type, op)))
    .join('')}${['f32', 'f64'].map(divide).join('')})
`;

/** One thread's sched_yield(2), through WASI (JavaScript has none); WASI wants a memory and _initialize. */
const schedYieldWat = `;; Generated by scripts/build-kernels.mjs: sched_yield for the thread that calls yield_core.
(module
  (import "wasi_snapshot_preview1" "sched_yield" (func $sched_yield (result i32)))
  (memory (export "memory") 1)
  (func (export "_initialize"))
  (func (export "yield_core") (result i32) (call $sched_yield)))
`;

const MODULES = [
  { wat, dir: 'kernels', name: 'reduce-simd', constant: 'REDUCE_SIMD_WASM', features: { simd: true, threads: true } },
  {
    wat: codecWat,
    dir: 'kernels',
    name: 'codec-simd',
    constant: 'CODEC_SIMD_WASM',
    features: { simd: true, threads: true },
  },
  { wat: schedYieldWat, dir: 'transport', name: 'sched-yield', constant: 'SCHED_YIELD_WASM', features: {} },
];

const check = process.argv.includes('--check');
const wabt = await wabtInit();
let stale = false;
for (const { wat: text, dir, name, constant, features } of MODULES) {
  const binary = wabt.parseWat(`${name}.wat`, text, features);
  const bytes = Buffer.from(binary.toBinary({}).buffer);
  // wabt's validator does not take shared memories; V8, which runs the kernels, does.
  if (!WebAssembly.validate(bytes)) throw new Error(`the assembled ${name} module does not validate`);
  const ts = `// Generated by scripts/build-kernels.mjs from ${name}.wat; do not edit. ${bytes.byteLength} bytes.\nexport const ${constant} = '${bytes.toString('base64')}';\n`;
  const watPath = fileURLToPath(new URL(`../src/${dir}/${name}.wat`, import.meta.url));
  const tsPath = fileURLToPath(new URL(`../src/${dir}/${name}-wasm.ts`, import.meta.url));
  if (check) {
    const same =
      existsSync(watPath) &&
      existsSync(tsPath) &&
      readFileSync(watPath, 'utf8') === text &&
      readFileSync(tsPath, 'utf8') === ts;
    if (!same) {
      console.error(`src/${dir}/${name}.* differ from scripts/build-kernels.mjs: run npm run build:kernels`);
      stale = true;
    }
  } else {
    writeFileSync(watPath, text);
    writeFileSync(tsPath, ts);
    console.log(`wrote ${watPath} and ${tsPath} (${bytes.byteLength} bytes)`);
  }
}
if (stale) process.exit(1);
if (check) console.log(`kernels up to date (${MODULES.map((m) => m.name).join(', ')})`);
