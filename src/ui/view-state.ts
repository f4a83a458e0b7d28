/**
 * What the page shows, as a permalink holds it (`#view=links&topo=ascend-910b&tp=4`), and the
 * API requests each view needs. Pure: the page and the server (which answers the requests, or
 * writes their answers into a static report) share it, so both name a view's data alike.
 */
export const VIEWS = ['topology', 'curves', 'timeline', 'train', 'job'] as const;
export type View = (typeof VIEWS)[number];

export interface ViewState {
  readonly view: View;
  readonly topo: string;
  /** Servers of a multi-server preset; 0: the preset's own. */
  readonly nodes: number;
  readonly tp: number;
  readonly pp: number;
  /** 0: fill the accelerators the others leave. */
  readonly dp: number;
  readonly group: 'tp' | 'dp' | 'pp';
  /** Explicit groups ("0,1,2,3;4,5,6,7") in place of the layout's; '': the layout's. */
  readonly ranks: string;
  /** Bytes each group moves (topology), bytes of the call (timeline). */
  readonly size: number;
  readonly op: string;
  /** '': the simulator's choice. */
  readonly algo: string;
  readonly channel: number;
  readonly model: string;
  readonly mode: 'auto' | 'flow' | 'analytical';
}

export const DEFAULT_STATE: ViewState = {
  view: 'topology',
  topo: 'dgx-h100',
  nodes: 0,
  tp: 8,
  pp: 1,
  dp: 0,
  group: 'tp',
  ranks: '',
  size: 64 * 2 ** 20,
  op: 'all_reduce',
  algo: '',
  channel: 0,
  model: 'gpt3-175b',
  mode: 'auto',
};

type Key = keyof ViewState;
const NUMBER_KEYS: readonly Key[] = ['nodes', 'tp', 'pp', 'dp', 'size', 'channel'];

/** A state from a query string; a value that does not parse keeps the default (the server refuses bad ones when asked). */
export function stateFromQuery(query: string): ViewState {
  const params = new URLSearchParams(query.replace(/^[#?]/, ''));
  const state: Record<string, unknown> = { ...DEFAULT_STATE };
  for (const key of Object.keys(DEFAULT_STATE) as Key[]) {
    const value = params.get(key);
    if (value === null) continue;
    if (NUMBER_KEYS.includes(key)) {
      const n = Number(value);
      if (Number.isInteger(n) && n >= 0) state[key] = n;
    } else if (key === 'view') {
      if ((VIEWS as readonly string[]).includes(value)) state[key] = value;
    } else if (key === 'group') {
      if (['tp', 'dp', 'pp'].includes(value)) state[key] = value;
    } else if (key === 'mode') {
      if (['auto', 'flow', 'analytical'].includes(value)) state[key] = value;
    } else state[key] = value;
  }
  return state as unknown as ViewState;
}

/** The state's values that differ from the defaults, keys sorted: the permalink's hash. */
export function stateToQuery(state: ViewState, keys: readonly Key[] = Object.keys(DEFAULT_STATE) as Key[]): string {
  const params = new URLSearchParams();
  for (const key of [...keys].sort()) if (state[key] !== DEFAULT_STATE[key]) params.set(key, String(state[key]));
  return params.toString();
}

const TOPOLOGY_KEYS: readonly Key[] = ['topo', 'nodes'];
const API_KEYS: Readonly<Record<string, readonly Key[]>> = {
  topology: TOPOLOGY_KEYS,
  links: [...TOPOLOGY_KEYS, 'tp', 'pp', 'dp', 'group', 'ranks', 'size'],
  curves: [...TOPOLOGY_KEYS, 'op', 'mode'],
  timeline: [...TOPOLOGY_KEYS, 'op', 'size', 'algo', 'channel'],
  train: [...TOPOLOGY_KEYS, 'model', 'tp', 'pp', 'dp', 'mode'],
  job: [],
  bench: [],
  measured: [],
  presets: [],
};
export const API_NAMES = Object.keys(API_KEYS);

/** The URL of one API answer for a state: only the keys that answer reads, so views share answers. */
export function apiUrl(api: string, state: ViewState): string {
  const query = stateToQuery(state, API_KEYS[api]);
  return `api/${api}${query === '' ? '' : `?${query}`}`;
}

/** The answers a view draws. */
export function viewRequests(state: ViewState): string[] {
  const needs: Record<View, string[]> = {
    topology: ['presets', 'topology', 'links'],
    curves: ['presets', 'curves', 'bench'],
    timeline: ['presets', 'topology', 'timeline'],
    train: ['presets', 'train', 'measured'],
    job: ['job'],
  };
  return needs[state.view].map((api) => apiUrl(api, state));
}
