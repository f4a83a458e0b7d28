import { existsSync, readFileSync } from 'node:fs';
import { invalidArgument } from '../errors.js';
import { type PresetOptions, PRESET_NAMES, buildPreset } from './presets/presets.js';
import { type Topology, parseTopology } from './topology-schema.js';
import { loadProfile } from './local-profile.js';
import { detectLocal, localTopology } from './local-topology.js';

export interface LoadOptions extends PresetOptions {
  /** For `local`: ranks are processes over TCP instead of threads over shared memory. */
  readonly procs?: boolean;
}

/**
 * This machine as a topology (`--topo local`): detection plus the `tsccl tune` profile, with
 * where the profile came from.
 */
export function loadLocalTopology(
  ranks: number | undefined,
  transport: 'shm' | 'tcp',
): { topology: Topology; profileSource: string } {
  const detection = detectLocal();
  const { profile, source } = loadProfile(detection.cores, detection.host);
  const topology = parseTopology(
    localTopology({ ranks: ranks ?? detection.cores, transport, profile, detection }),
    'local',
  );
  return { topology, profileSource: source };
}

/**
 * A topology from a --topo value: `local` (this machine, from detection and the `tsccl tune`
 * profile; --gpus is the rank count), a preset name (with the preset options) or a JSON file in
 * the topology format, validated. Preset options do not apply to files (a file describes its whole cluster), except --gdr.
 */
export function loadTopology(spec: string, options: LoadOptions = {}): Topology {
  if (spec === 'local') return loadLocalTopology(options.gpus, options.procs ? 'tcp' : 'shm').topology;
  // Presets come from tsccl's own builders, which check their options; every preset is held to
  // the schema in test/topology/topology.test.ts, so loading one skips the parse (0.4 s at
  // 100,000 ranks, about a third of the analytical model's whole run).
  if (PRESET_NAMES.includes(spec)) return buildPreset(spec, options);
  if (spec.endsWith('.json') || existsSync(spec)) {
    if (!existsSync(spec)) throw invalidArgument(`--topo file '${spec}' does not exist`, { argument: '--topo' });
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(spec, 'utf8'));
    } catch (err) {
      throw invalidArgument(`--topo file '${spec}' is not JSON: ${(err as Error).message}`, { argument: '--topo' });
    }
    const topology = parseTopology(doc, `file ${spec}`);
    // --gdr is the one preset option a file takes: it is how the job runs, not what the cluster is.
    return options.gdr === undefined ? topology : { ...topology, gpuDirectRdma: options.gdr };
  }
  throw invalidArgument(
    `Unknown topology '${spec}': expected local, a .json file or one of ${PRESET_NAMES.join(', ')}`,
    { argument: '--topo' },
  );
}
