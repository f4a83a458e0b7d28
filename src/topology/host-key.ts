import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Names the machine a rank runs on, so ranks can tell which peers share a host. The network
 * namespace is part of it: two namespaces on one machine are separate hosts to the network,
 * and that is what the multi-host tests build.
 */
export function hostKey(): string {
  let namespace = '';
  try { namespace = readlinkSync('/proc/self/ns/net'); } catch { /* not Linux */ }
  return `${hostname()}|${namespace}`;
}

/** Dense host indices (in order of first appearance) for a list of host keys. */
export function hostIndices(keys: readonly string[]): number[] {
  const seen = new Map<string, number>();
  return keys.map((k) => { if (!seen.has(k)) seen.set(k, seen.size); return seen.get(k)!; });
}
