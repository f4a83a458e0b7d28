import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { BENCH_OP_NAMES, type BenchOpName } from '../algorithms/bench-ops.js';
import { traceDocument } from '../debug/trace-document.js';
import { invalidArgument } from '../errors.js';
import { curvesDocument, groupsOfLayout, linksDocument, parseGroups, trainDocument } from '../sim/sim-documents.js';
import type { SimMode } from '../sim/simulate.js';
import { collectiveTimeline } from '../sim/timeline.js';
import { MODELS } from '../sim/training.js';
import { loadTopology } from '../topology/load-topology.js';
import { PRESETS, PRESET_NAMES } from '../topology/presets/presets.js';
import { TopologyGraph } from '../topology/topology-graph.js';
import { tscclChooser } from '../tuner/sim-chooser.js';
import { API_NAMES, DEFAULT_STATE, type ViewState, stateFromQuery } from './view-state.js';

/** What the page may read besides presets: the files `tsccl ui` was started with. */
export interface UiContext {
  /** A topology file named on the command line (the page may ask for it by that name). */
  readonly topologyFile?: string;
  /** `tsccl bench --format json` files to overlay on the curves. */
  readonly benchFiles: readonly string[];
  /** A flight-recorder directory (TSCCL_TRACE_DIR) for the job view. */
  readonly traceDir?: string;
  /** Chrome traces of measured training runs (tsccl/train's writeTrace) for the training view. */
  readonly trainTraces?: readonly string[];
}

/** Above this many ranks `mode=auto` uses the analytical model: the page answers in seconds, not minutes. */
const PAGE_FLOW_MAX_RANKS = 64;
/** A timeline lists every step of every rank: beyond this it is a file no page draws. */
const TIMELINE_MAX_RANKS = 256;

/**
 * The answer to one API request of the page (`api/links?tp=4&topo=ascend-910b`), built by the
 * same functions `tsccl sim ... --format json` prints. Bad input is a TscclError naming the parameter.
 */
export function answerApi(url: string, context: UiContext): unknown {
  const [path, query = ''] = url.split('?');
  const api = path.replace(/^\/?api\//, '');
  if (!API_NAMES.includes(api))
    throw invalidArgument(`no API '${api}': expected one of ${API_NAMES.join(', ')}`, { argument: 'api' });
  const state = strictState(query);
  switch (api) {
    case 'presets':
      return {
        presets: PRESET_NAMES.map((name) => ({ name, description: PRESETS[name].description })),
        files: context.topologyFile === undefined ? [] : [context.topologyFile],
        models: Object.keys(MODELS),
        ops: BENCH_OP_NAMES,
      };
    case 'bench':
      return context.benchFiles.map((file) => ({ name: basename(file), doc: readBench(file) }));
    case 'measured':
      return (context.trainTraces ?? []).map((file) => ({ name: basename(file), trace: readTrainTrace(file) }));
    case 'job':
      return context.traceDir === undefined ? null : traceDocument(context.traceDir);
  }
  const graph = graphOf(state, context);
  const ranks = graph.accelerators.length;
  const mode: SimMode = state.mode === 'auto' ? (ranks > PAGE_FLOW_MAX_RANKS ? 'analytical' : 'flow') : state.mode;
  switch (api) {
    case 'topology':
      return { tool: 'tsccl topo show', accelerators: ranks, topology: graph.topology };
    case 'links':
      return linksDocument(graph, {
        groups:
          state.ranks === '' ? groupsOfLayout(layoutOf(state), state.group, ranks) : parseGroups(state.ranks, 'ranks'),
        group: state.group,
        bytes: state.size,
        nvls: true,
        chooser: tscclChooser,
      });
    case 'curves':
      return curvesDocument(graph, {
        op: state.op as BenchOpName,
        minBytes: 8,
        maxBytes: 2 ** 30,
        factor: 4,
        mode,
        nvls: true,
        chooser: tscclChooser,
      });
    case 'timeline':
      if (ranks > TIMELINE_MAX_RANKS)
        throw invalidArgument(`the timeline draws up to ${TIMELINE_MAX_RANKS} ranks; ${state.topo} has ${ranks}`, {
          argument: 'topo',
        });
      return collectiveTimeline(graph, graph.accelerators, {
        op: state.op as BenchOpName,
        bytes: state.size,
        ...(state.algo === '' ? {} : { algorithm: state.algo }),
        nvls: true,
        root: 0,
        channel: state.channel,
        chooser: tscclChooser,
      });
    default: {
      const model = MODELS[state.model];
      return trainDocument(graph, {
        ...layoutOf(state),
        model,
        ep: 1,
        microBatch: 1,
        gradBytes: 2,
        sequenceParallel: false,
        mode,
        nvls: true,
        chooser: tscclChooser,
      });
    }
  }
}

function layoutOf(state: ViewState): { tp: number; pp: number; dp?: number } {
  return { tp: state.tp, pp: state.pp, ...(state.dp === 0 ? {} : { dp: state.dp }) };
}

function graphOf(state: ViewState, context: UiContext): TopologyGraph {
  if (!PRESET_NAMES.includes(state.topo) && state.topo !== context.topologyFile)
    throw invalidArgument(
      `topo '${state.topo}' is neither a preset (${PRESET_NAMES.join(', ')}) nor the file tsccl ui was started with`,
      { argument: 'topo' },
    );
  return new TopologyGraph(loadTopology(state.topo, state.nodes === 0 ? {} : { nodes: state.nodes }));
}

/** The query as a state, every value given checked: the page's own links never fail this, a typed URL may. */
function strictState(query: string): ViewState {
  const params = new URLSearchParams(query);
  const state = stateFromQuery(query);
  for (const [key, value] of params) {
    if (!(key in DEFAULT_STATE)) throw invalidArgument(`unknown parameter '${key}'`, { argument: key });
    if (String(state[key as keyof ViewState]) !== value)
      throw invalidArgument(`${key}=${value} is not valid: expected ${expected(key)}`, { argument: key });
  }
  for (const key of ['tp', 'pp'] as const)
    if (state[key] < 1) throw invalidArgument(`${key}=${state[key]}: expected a positive integer`, { argument: key });
  if (state.size < 1) throw invalidArgument('size: expected a positive number of bytes', { argument: 'size' });
  if (!BENCH_OP_NAMES.includes(state.op as BenchOpName))
    throw invalidArgument(`op=${state.op}: expected one of ${BENCH_OP_NAMES.join(', ')}`, { argument: 'op' });
  if (MODELS[state.model] === undefined)
    throw invalidArgument(`model=${state.model}: expected one of ${Object.keys(MODELS).join(', ')}`, {
      argument: 'model',
    });
  return state;
}

function expected(key: string): string {
  if (key === 'view') return 'topology, curves, timeline, train or job';
  if (key === 'group') return 'tp, dp or pp';
  if (key === 'mode') return 'auto, flow or analytical';
  return 'a non-negative integer';
}

/** A training run's Chrome trace, or a refusal naming the file. */
function readTrainTrace(file: string): unknown {
  let doc: { traceEvents?: unknown };
  try {
    doc = JSON.parse(readFileSync(file, 'utf8')) as typeof doc;
  } catch (err) {
    throw invalidArgument(`--train-trace ${file}: ${(err as Error).message}`, { argument: '--train-trace' });
  }
  if (!Array.isArray(doc.traceEvents))
    throw invalidArgument(`--train-trace ${file} is not a Chrome trace (tsccl/train's writeTrace writes one)`, {
      argument: '--train-trace',
    });
  return doc;
}

/** A bench file as the page overlays it: its rows, or a refusal naming the file. */
function readBench(file: string): unknown {
  let doc: { tool?: string; rows?: unknown };
  try {
    doc = JSON.parse(readFileSync(file, 'utf8')) as typeof doc;
  } catch (err) {
    throw invalidArgument(`--bench ${file}: ${(err as Error).message}`, { argument: '--bench' });
  }
  if (doc.tool !== 'tsccl bench' || !Array.isArray(doc.rows))
    throw invalidArgument(`--bench ${file} is not the output of tsccl bench --format json`, { argument: '--bench' });
  return doc;
}
