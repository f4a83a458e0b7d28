/** The middle of repeated measurements (the upper middle of an even count), as `tsccl tune` reports them. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[xs.length >> 1];
}
