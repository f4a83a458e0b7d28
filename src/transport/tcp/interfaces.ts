import { type NetworkInterfaceInfo, networkInterfaces } from 'node:os';
import { invalidArgument } from '../../errors.js';

export interface InterfaceAddress {
  readonly name: string;
  readonly address: string;
  readonly family: 'IPv4' | 'IPv6';
  readonly internal: boolean;
}

/**
 * Chooses interfaces as NCCL_SOCKET_IFNAME does: a comma-separated list of name prefixes;
 * a leading `^` excludes the listed ones instead; a leading `=` makes the names exact.
 * Without a filter, loopback and docker bridges are skipped unless nothing else exists.
 */
export function selectInterfaces(
  filter: string | undefined,
  available: InterfaceAddress[] = listInterfaces(),
): InterfaceAddress[] {
  if (filter === undefined || filter.trim() === '') {
    const preferred = available.filter((i) => !i.internal && !i.name.startsWith('docker'));
    return preferred.length > 0 ? preferred : available;
  }
  let spec = filter.trim();
  const exclude = spec.startsWith('^');
  if (exclude) spec = spec.slice(1);
  const exact = spec.startsWith('=');
  if (exact) spec = spec.slice(1);
  const names = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const matches = (name: string) => names.some((n) => (exact ? name === n : name.startsWith(n)));
  const chosen = available.filter((i) => matches(i.name) !== exclude);
  if (chosen.length === 0) {
    const have = [...new Set(available.map((i) => `${i.name} (${i.address})`))].join(', ');
    throw invalidArgument(`TSCCL_SOCKET_IFNAME=${filter} matches no interface; this host has: ${have}`, {
      argument: 'TSCCL_SOCKET_IFNAME',
    });
  }
  return chosen;
}

export function listInterfaces(): InterfaceAddress[] {
  return Object.entries(networkInterfaces()).flatMap(([name, infos]) =>
    (infos ?? []).map((i: NetworkInterfaceInfo) => ({
      name,
      address: i.address,
      family: i.family === 'IPv6' ? ('IPv6' as const) : ('IPv4' as const),
      internal: i.internal,
    })),
  );
}
