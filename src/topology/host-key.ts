import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Names the host a rank runs on, so ranks can tell which peers share one. The network
 * namespace is part of it: two namespaces on one machine are separate hosts to the network,
 * and that is what the multi-host tests build. The kernel's boot id comes last, for machineOf.
 */
export function hostKey(): string {
  let namespace = '';
  try {
    namespace = readlinkSync('/proc/self/ns/net');
  } catch {
    /* not Linux */
  }
  let boot = '';
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    /* not Linux */
  }
  return `${hostname()}|${namespace}|${boot}`;
}

/**
 * The machine of a host key: its kernel's boot id (the host name where there is none). Ranks
 * on one machine share its cores whatever their namespaces, as the hosts of the emulated
 * cluster (bench/predict-netns.mjs) do: 8 ranks in 4 namespaces on 2 cores.
 */
export function machineOf(key: string): string {
  const [name, , boot] = key.split('|');
  return boot || name;
}

/** Dense host indices (in order of first appearance) for a list of host keys. */
export function hostIndices(keys: readonly string[]): number[] {
  const seen = new Map<string, number>();
  return keys.map((k) => {
    if (!seen.has(k)) seen.set(k, seen.size);
    return seen.get(k)!;
  });
}
