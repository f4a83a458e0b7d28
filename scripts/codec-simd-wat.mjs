// The WebAssembly text of the compression codecs (src/compress/): blockwise int8 and int4,
// bf16 and fp16, 16 (int) or 8 (16-bit floats) elements per step over the shared arena. Callers
// pass whole blocks whose size is a multiple of 16 (int) and element counts that are multiples
// of 8 (floats); the JavaScript codecs do any remainder. Pointers are byte offsets in the arena.

const splatI32 = (v) => `(i32x4.splat (i32.const ${v}))`;

/** Four i32x4 codes (already clamped) narrowed to one i8x16, in element order. */
const narrow4 = (a, b, c, d) =>
  `(i8x16.narrow_i16x8_s (i16x8.narrow_i32x4_s ${a} ${b}) (i16x8.narrow_i32x4_s ${c} ${d}))`;

/**
 * The finite-absolute-maximum pass over one block at $p0 ($block elements), into $max; $finite
 * is 1 when every element of the block is finite ($raw keeps a lane set while its elements were).
 */
const blockAbsMax = `
      (local.set $m (v128.const i32x4 0 0 0 0))
      (local.set $raw (v128.const i32x4 -1 -1 -1 -1))
      (local.set $p (local.get $p0))
      (local.set $i (i32.const 0))
      (block $d1 (loop $l1
        (br_if $d1 (i32.ge_u (local.get $i) (local.get $block)))
        (local.set $x (f32x4.abs (v128.load (local.get $p))))
        ;; Finite lanes compare below Inf (NaN does not); the others count as 0, and clear $raw's lane.
        (local.set $fin (f32x4.lt (local.get $x) (v128.const f32x4 inf inf inf inf)))
        (local.set $raw (v128.and (local.get $raw) (local.get $fin)))
        (local.set $m (f32x4.pmax (local.get $m) (v128.and (local.get $x) (local.get $fin))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $l1)))
      (local.set $max (f32.max
        (f32.max (f32x4.extract_lane 0 (local.get $m)) (f32x4.extract_lane 1 (local.get $m)))
        (f32.max (f32x4.extract_lane 2 (local.get $m)) (f32x4.extract_lane 3 (local.get $m)))))
      (local.set $finite (i32x4.all_true (local.get $raw)))`;

/**
 * Vector k (0..3) of the 16 elements at $p: clamped codes into $q<k>, and (unless the block is
 * all finite) its non-finite lanes into $bad<k>.
 */
const quantiseVector = (k, levels, finite) => `
        (local.set $x (v128.load offset=${k * 16} (local.get $p)))${
          finite
            ? ''
            : `
        (local.set $bad${k} (f32x4.ne (f32x4.sub (local.get $x) (local.get $x)) (v128.const i32x4 0 0 0 0)))`
        }
        ;; Round to nearest even by adding 1.5 x 2^23 (the integer lands in the mantissa bits).
        (local.set $q${k} (i32x4.max_s (i32x4.min_s
          (i32x4.sub (f32x4.add (f32x4.mul (local.get $x) (local.get $inv)) ${splatI32(0x4b400000)}) ${splatI32(0x4b400000)})
          ${splatI32(levels)}) ${splatI32(-levels)}))`;

/** Encoder of blockwise int8 (levels 127) or int4 (levels 7). */
function intEncode(name, levels) {
  const codes = narrow4('(local.get $q0)', '(local.get $q1)', '(local.get $q2)', '(local.get $q3)');
  const bad = narrow4('(local.get $bad0)', '(local.get $bad1)', '(local.get $bad2)', '(local.get $bad3)');
  const store = (finite) =>
    levels === 127
      ? `(v128.store (local.get $c) ${
          finite
            ? codes
            : `(v128.bitselect (v128.const i8x16 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128 -128)
            ${codes}
            ${bad})`
        })
        (local.set $c (i32.add (local.get $c) (i32.const 16)))`
      : `;; Nibbles q + 8 (0 marks a non-finite element), element 2k low and 2k+1 high in byte k.
        (local.set $x (i8x16.add ${codes} (i8x16.splat (i32.const 8))))${
          finite
            ? ''
            : `
        (local.set $x (v128.andnot (local.get $x) ${bad}))`
        }
        (local.set $x (v128.or (v128.and (local.get $x) (i16x8.splat (i32.const 0x000f)))
          (v128.and (i16x8.shr_u (local.get $x) (i32.const 4)) (i16x8.splat (i32.const 0x00f0)))))
        (i64.store (local.get $c) (i64x2.extract_lane 0 (i8x16.narrow_i16x8_u (local.get $x) (local.get $x))))
        (local.set $c (i32.add (local.get $c) (i32.const 8)))`;
  // The block's quantising loop: without the non-finite masks when every element is finite.
  const loop = (finite, label) => `
      (local.set $p (local.get $p0))
      (local.set $i (i32.const 0))
      (block $${label}d (loop $${label}l
        (br_if $${label}d (i32.ge_u (local.get $i) (local.get $block)))${[0, 1, 2, 3].map((k) => quantiseVector(k, levels, finite)).join('')}
        ${store(finite)}
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $${label}l)))`;
  return `
  (func (export "${name}") (param $src i32) (param $scales i32) (param $codes i32) (param $blocks i32) (param $block i32)
    (local $b i32) (local $i i32) (local $p i32) (local $p0 i32) (local $c i32) (local $m v128) (local $x v128)
    (local $max f32) (local $scale f32) (local $inv v128) (local $raw v128) (local $fin v128) (local $finite i32)
    (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $q3 v128)
    (local $bad0 v128) (local $bad1 v128) (local $bad2 v128) (local $bad3 v128)
    (local.set $p0 (local.get $src))
    (local.set $c (local.get $codes))
    (block $done (loop $blk
      (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))${blockAbsMax}
      (local.set $scale (f32.div (local.get $max) (f32.const ${levels})))
      (f32.store (i32.add (local.get $scales) (i32.shl (local.get $b) (i32.const 2))) (local.get $scale))
      (local.set $inv (f32x4.splat (select (f32.div (f32.const 1) (local.get $scale)) (f32.const 0)
        (f32.gt (local.get $scale) (f32.const 0)))))
      (if (local.get $finite) (then${loop(true, 'f')}) (else${loop(false, 'n')}))
      (local.set $p0 (local.get $p))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $blk))))`;
}

/** Decoder (or accumulator, $add) of blockwise int8 or int4: 16 codes per step into $x as i8x16. */
function intDecode(name, levels) {
  const load =
    levels === 127
      ? `(local.set $x (v128.load (local.get $c)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))`
      : `(local.set $x (v128.load64_zero (local.get $c)))
        (local.set $x (i8x16.sub (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23
          (v128.and (local.get $x) (i8x16.splat (i32.const 15))) (i8x16.shr_u (local.get $x) (i32.const 4)))
          (i8x16.splat (i32.const 8))))
        (local.set $c (i32.add (local.get $c) (i32.const 8)))`;
  const marker = levels === 127 ? -128 : -8;
  const lanes = [
    ['low', 'low'],
    ['low', 'high'],
    ['high', 'low'],
    ['high', 'high'],
  ];
  const vector = ([h16, h32], k) => `
        (local.set $q (i32x4.extend_${h32}_i16x8_s (i16x8.extend_${h16}_i8x16_s (local.get $x))))
        (local.set $f (v128.bitselect (v128.const f32x4 nan nan nan nan)
          (f32x4.mul (f32x4.convert_i32x4_s (local.get $q)) (local.get $s))
          (i32x4.eq (local.get $q) ${splatI32(marker)})))
        (if (local.get $add) (then (local.set $f (f32x4.add (v128.load offset=${k * 16} (local.get $d)) (local.get $f)))))
        (v128.store offset=${k * 16} (local.get $d) (local.get $f))`;
  return `
  (func (export "${name}") (param $scales i32) (param $codes i32) (param $dst i32) (param $blocks i32) (param $block i32) (param $add i32)
    (local $b i32) (local $i i32) (local $c i32) (local $d i32) (local $s v128) (local $x v128) (local $q v128) (local $f v128)
    (local.set $c (local.get $codes))
    (local.set $d (local.get $dst))
    (block $done (loop $blk
      (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
      (local.set $s (f32x4.splat (f32.load (i32.add (local.get $scales) (i32.shl (local.get $b) (i32.const 2))))))
      (local.set $i (i32.const 0))
      (block $d2 (loop $l2
        (br_if $d2 (i32.ge_u (local.get $i) (local.get $block)))
        ${load}${lanes.map(vector).join('')}
        (local.set $d (i32.add (local.get $d) (i32.const 64)))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $l2)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $blk))))`;
}

/** float32 -> bf16 bits, round to nearest even, NaN kept quiet: 8 elements per step. */
const bf16Half = (bits) => `(v128.bitselect
          (v128.or (i32x4.shr_u ${bits} (i32.const 16)) ${splatI32(0x40)})
          (i32x4.shr_u (i32x4.add (i32x4.add ${bits} ${splatI32(0x7fff)})
            (v128.and (i32x4.shr_u ${bits} (i32.const 16)) ${splatI32(1)})) (i32.const 16))
          (i32x4.gt_u (v128.and ${bits} ${splatI32(0x7fffffff)}) ${splatI32(0x7f800000)}))`;

/**
 * The fp16 bits of the float32 magnitudes in local `a` (sign cleared), round to nearest even:
 * overflow to Inf, NaN to a quiet NaN, subnormals by a magic add.
 */
const fp16Magnitude = (a) => `(v128.bitselect
          ;; at or above 65536 (or Inf, NaN): Inf, or a quiet NaN
          (v128.bitselect ${splatI32(0x7e00)} ${splatI32(0x7c00)} (i32x4.gt_u (local.get ${a}) ${splatI32(0x7f800000)}))
          (v128.bitselect
            ;; below 2^-14: the float add of 0.5 aligns the 10 mantissa bits at the bottom, rounded to even
            (i32x4.sub (f32x4.add (local.get ${a}) ${splatI32(0x3f000000)}) ${splatI32(0x3f000000)})
            ;; normal: rebias the exponent, add the rounding bias (0xfff plus the odd bit), take the bits
            (i32x4.shr_u (i32x4.add (i32x4.add (local.get ${a}) ${splatI32(-0x37fff001)})
              (v128.and (i32x4.shr_u (local.get ${a}) (i32.const 13)) ${splatI32(1)})) (i32.const 13))
            (i32x4.lt_u (local.get ${a}) ${splatI32(113 << 23)}))
          (i32x4.ge_u (local.get ${a}) ${splatI32(143 << 23)}))`;

/** The float32 bits of the fp16 values (zero-extended to i32 lanes) in local `h`, with locals `o` and `e` to work in. */
const fp16Value = (
  h,
  o,
  e,
) => `(local.set ${o} (i32x4.add (i32x4.shl (v128.and (local.get ${h}) ${splatI32(0x7fff)}) (i32.const 13)) ${splatI32(112 << 23)}))
      (local.set ${e} (v128.and (local.get ${h}) ${splatI32(0x7c00)}))
      (local.set $f (v128.or (i32x4.shl (v128.and (local.get ${h}) ${splatI32(0x8000)}) (i32.const 16))
        (v128.bitselect
          (i32x4.add (local.get ${o}) ${splatI32(112 << 23)})
          (v128.bitselect
            (f32x4.sub (i32x4.add (local.get ${o}) ${splatI32(1 << 23)}) ${splatI32(113 << 23)})
            (local.get ${o})
            (i32x4.eq (local.get ${e}) ${splatI32(0)}))
          (i32x4.eq (local.get ${e}) ${splatI32(0x7c00)}))))`;

// Each loop step: 8 values, two i32x4 halves loaded into $b0 and $b1, their results in $r0 and $r1.
const encodeHalves = (name) =>
  [0, 1]
    .map((k) =>
      name === 'bf16'
        ? `
      (local.set $r${k} ${bf16Half(`(local.get $b${k})`)})`
        : `
      (local.set $a (v128.and (local.get $b${k}) ${splatI32(0x7fffffff)}))
      (local.set $r${k} (v128.or (i32x4.shr_u (v128.and (local.get $b${k}) ${splatI32(0x80000000)}) (i32.const 16))
        ${fp16Magnitude('$a')}))`,
    )
    .join('');

const floatCodecs = ['bf16', 'fp16']
  .map(
    (name) => `
  (func (export "${name}_encode") (param $src i32) (param $dst i32) (param $n i32)
    (local $i i32) (local $b0 v128) (local $b1 v128) (local $a v128) (local $r0 v128) (local $r1 v128)
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $b0 (v128.load (local.get $src)))
      (local.set $b1 (v128.load offset=16 (local.get $src)))${encodeHalves(name)}
      (v128.store (local.get $dst) (i16x8.narrow_i32x4_u (local.get $r0) (local.get $r1)))
      (local.set $src (i32.add (local.get $src) (i32.const 32)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
      (local.set $i (i32.add (local.get $i) (i32.const 8)))
      (br $l))))
  (func (export "${name}_decode") (param $src i32) (param $dst i32) (param $n i32) (param $add i32)
    (local $i i32) (local $h v128) (local $w v128) (local $o v128) (local $e v128) (local $f v128)
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $h (v128.load (local.get $src)))${['low', 'high']
        .map(
          (half, k) => `
      (local.set $w (i32x4.extend_${half}_i16x8_u (local.get $h)))
      ${name === 'bf16' ? '(local.set $f (i32x4.shl (local.get $w) (i32.const 16)))' : fp16Value('$w', '$o', '$e')}
      (if (local.get $add) (then (local.set $f (f32x4.add (v128.load offset=${k * 16} (local.get $dst)) (local.get $f)))))
      (v128.store offset=${k * 16} (local.get $dst) (local.get $f))`,
        )
        .join('')}
      (local.set $src (i32.add (local.get $src) (i32.const 16)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 32)))
      (local.set $i (i32.add (local.get $i) (i32.const 8)))
      (br $l))))`,
  )
  .join('');

export const codecWat = `;; Generated by scripts/build-kernels.mjs from scripts/codec-simd-wat.mjs: the compression codecs
;; of src/compress/ over the shared arena (byte offsets). Whole blocks of a multiple of 16
;; elements (int8, int4) and multiples of 8 elements (bf16, fp16); JavaScript does the rest.
(module
  (memory (import "env" "memory") 1 65536 shared)${intEncode('int8_encode', 127)}${intDecode('int8_decode', 127)}${intEncode('int4_encode', 7)}${intDecode('int4_decode', 7)}${floatCodecs})
`;
