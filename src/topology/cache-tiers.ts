import type { Device } from './topology-schema.js';

export type CacheTiers = NonNullable<Device['cacheTiers']>;

/**
 * The speed factor of a host for a call whose buffers there total `bytes`: the tiers'
 * scale, interpolated in log(bytes) between tiers and held beyond the first and last.
 */
export function cacheScale(tiers: CacheTiers, bytes: number): number {
  const sorted = [...tiers].sort((a, b) => a.bytes - b.bytes);
  if (bytes <= sorted[0].bytes) return sorted[0].scale;
  for (let i = 1; i < sorted.length; i++) {
    const [low, high] = [sorted[i - 1], sorted[i]];
    if (bytes <= high.bytes) return low.scale + (high.scale - low.scale) * (Math.log(bytes / low.bytes) / Math.log(high.bytes / low.bytes));
  }
  return sorted[sorted.length - 1].scale;
}
