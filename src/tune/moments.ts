/**
 * The 2-core VMs change speed within seconds, so tune samples a rate at several moments apart
 * and keeps the rate of the mean time per unit: the harmonic mean of the rates, not their mean,
 * so that a slow moment weighs by the time it costs.
 */

/** `sample` taken `moments` times, `gapMs` apart. */
export async function sampleMoments<T>(moments: number, gapMs: number, sample: () => T | Promise<T>): Promise<T[]> {
  const samples: T[] = [];
  for (let m = 0; m < moments; m++) {
    if (m > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    samples.push(await sample());
  }
  return samples;
}

/** The rate of the mean time per unit over samples of a rate. */
export function rateOfMeanTime(rates: readonly number[]): number {
  return rates.length / rates.reduce((seconds, rate) => seconds + 1 / rate, 0);
}
