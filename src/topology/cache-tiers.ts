import type { Device } from './topology-schema.js';

export type CacheTiers = NonNullable<Device['cacheTiers']>;

/**
 * The speed factor of a host for a call whose buffers there total `bytes`: the tiers'
 * scale, interpolated in log(bytes) between tiers and held beyond the first and last. With
 * `sharedScale`, the factor on what the host forwards while all its cores copy at once; with
 * `reduceScale`, on a core's reductions (a tier without the one asked for stands by its scale).
 */
export function cacheScale(
  tiers: CacheTiers,
  bytes: number,
  which: 'scale' | 'sharedScale' | 'reduceScale' = 'scale',
): number {
  const sorted = [...tiers].sort((a, b) => a.bytes - b.bytes);
  const at = (tier: CacheTiers[number]) => tier[which] ?? tier.scale;
  if (bytes <= sorted[0].bytes) return at(sorted[0]);
  for (let i = 1; i < sorted.length; i++) {
    const [low, high] = [sorted[i - 1], sorted[i]];
    if (bytes <= high.bytes)
      return at(low) + (at(high) - at(low)) * (Math.log(bytes / low.bytes) / Math.log(high.bytes / low.bytes));
  }
  return at(sorted[sorted.length - 1]);
}
