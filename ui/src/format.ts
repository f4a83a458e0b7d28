/** Every number the page shows carries its unit. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

export function formatUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(1)} µs`;
}

export const formatGBps = (gbps: number) => `${gbps.toFixed(1)} GB/s`;
export const formatPercent = (fraction: number) => `${(fraction * 100).toFixed(0)} %`;

/** A size typed by a user: "64M", "1G", "4096" (bytes, binary multiples). */
export function parseSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text);
  if (match === null) return undefined;
  const scale = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }[match[2].toLowerCase() as '' | 'k'];
  return Math.round(Number(match[1]) * scale);
}
