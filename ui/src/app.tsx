import { useEffect, useState } from 'preact/hooks';
import { VIEWS, type View, type ViewState, stateFromQuery, stateToQuery } from '../../src/ui/view-state.js';
import { isStatic } from './data.js';
import { CurvesView } from './views/curves-view.js';
import { JobView } from './views/job-view.js';
import { TimelineView } from './views/timeline-view.js';
import { TopologyView } from './views/topology-view.js';
import { TrainView } from './views/train-view.js';

const TITLES: Record<View, string> = {
  topology: 'Topology',
  curves: 'Curves',
  timeline: 'Timeline',
  train: 'Training step',
  job: 'Job',
};

export type SetState = (change: Partial<ViewState>) => void;

function initialState(): ViewState {
  return stateFromQuery(location.hash.length > 1 ? location.hash : (window.__TSCCL_STATE__ ?? ''));
}

/** The page: a tab per view, the view state in the URL (a permalink), a light and a dark theme. */
export function App() {
  const [state, setFullState] = useState<ViewState>(initialState);
  const [theme, setTheme] = useState<'light' | 'dark'>(() =>
    matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light',
  );
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  useEffect(() => {
    const query = stateToQuery(state);
    if (location.hash.slice(1) !== query)
      history.replaceState(null, '', query === '' ? location.pathname : `#${query}`);
  }, [state]);
  useEffect(() => {
    const onHash = () => setFullState(initialState());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  const set: SetState = (change) => setFullState((old) => ({ ...old, ...change }));
  const onTabKey = (event: KeyboardEvent) => {
    const i = VIEWS.indexOf(state.view);
    const next = event.key === 'ArrowRight' ? i + 1 : event.key === 'ArrowLeft' ? i - 1 : undefined;
    if (next === undefined) return;
    const view = VIEWS[(next + VIEWS.length) % VIEWS.length];
    set({ view });
    document.getElementById(`tab-${view}`)?.focus();
  };
  return (
    <>
      <header>
        <h1>tsccl</h1>
        <div role="tablist" aria-label="Views" onKeyDown={onTabKey}>
          {VIEWS.map((view) => (
            <button
              type="button"
              role="tab"
              id={`tab-${view}`}
              aria-selected={state.view === view}
              aria-controls="view"
              tabIndex={state.view === view ? 0 : -1}
              onClick={() => set({ view })}
              key={view}
            >
              {TITLES[view]}
            </button>
          ))}
        </div>
        <span class="spacer" />
        {isStatic() && <span class="badge">static report</span>}
        <button
          type="button"
          class="theme"
          aria-label={`switch to the ${theme === 'dark' ? 'light' : 'dark'} theme`}
          onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
        >
          {theme === 'dark' ? '☀ light' : '☾ dark'}
        </button>
      </header>
      <main>
        <div id="view" role="tabpanel" aria-labelledby={`tab-${state.view}`}>
          {state.view === 'topology' && <TopologyView state={state} set={set} />}
          {state.view === 'curves' && <CurvesView state={state} set={set} />}
          {state.view === 'timeline' && <TimelineView state={state} set={set} />}
          {state.view === 'train' && <TrainView state={state} set={set} />}
          {state.view === 'job' && <JobView />}
        </div>
      </main>
    </>
  );
}
