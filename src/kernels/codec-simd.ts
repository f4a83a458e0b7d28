/**
 * The compression codecs' WebAssembly SIMD loops (codec-simd.wat), over an arena's memory:
 * pointers are byte offsets in it. Int formats take whole blocks of a multiple of 16 elements,
 * 16-bit floats multiples of 8 elements; the JavaScript codecs do the rest.
 */
export interface CodecSimd {
  int8_encode(src: number, scales: number, codes: number, blocks: number, block: number): void;
  int8_decode(scales: number, codes: number, dst: number, blocks: number, block: number, add: number): void;
  int4_encode(src: number, scales: number, codes: number, blocks: number, block: number): void;
  int4_decode(scales: number, codes: number, dst: number, blocks: number, block: number, add: number): void;
  bf16_encode(src: number, dst: number, count: number): void;
  bf16_decode(src: number, dst: number, count: number, add: number): void;
  fp16_encode(src: number, dst: number, count: number): void;
  fp16_decode(src: number, dst: number, count: number, add: number): void;
  /** Whether a view lives in the arena the loops run on (its byteOffset is then its address). */
  contains(view: ArrayBufferView): boolean;
}
