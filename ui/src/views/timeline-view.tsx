import * as Plot from '@observablehq/plot';
import { useMemo, useState } from 'preact/hooks';
import { chromeTrace } from '../../../src/sim/chrome-trace.js';
import type { TimelineDocument, TimelineStep } from '../../../src/sim/timeline.js';
import { type ViewState, apiUrl } from '../../../src/ui/view-state.js';
import type { SetState } from '../app.js';
import {
  ChoiceField,
  Failure,
  Field,
  Loading,
  NumberField,
  type Presets,
  SizeField,
  TopologyPicker,
} from '../controls.js';
import { formatBytes, formatPercent, formatUs } from '../format.js';
import { PlotFigure } from '../plot-figure.js';
import { useApi } from '../use-api.js';

const KIND_COLORS: Record<string, string> = {
  recvReduce: '#d9822b',
  recv: '#3b6fb6',
  send: '#4c9a2a',
  local: '#8a5cb8',
};
const LINKS_SHOWN = 8;

/** One collective step by step: each rank's steps on a channel, and the busiest links' utilisation over time. */
export function TimelineView({ state, set }: { state: ViewState; set: SetState }) {
  const timeline = useApi<TimelineDocument>(apiUrl('timeline', state));
  const presets = useApi<Presets>(apiUrl('presets', state));
  return (
    <section class="view">
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <TopologyPicker state={state} set={set} presets={presets} />
        <ChoiceField
          label="collective"
          value={state.op}
          choices={presets.state === 'ready' ? presets.data.ops.filter((op) => op !== 'sendrecv') : undefined}
          onChange={(op) => set({ op })}
        />
        <SizeField label="bytes" value={state.size} onCommit={(size) => set({ size })} />
        <Field label="algorithm (empty: simulator's choice)">
          <input
            type="text"
            value={state.algo}
            onChange={(e) => set({ algo: e.currentTarget.value.trim(), channel: 0 })}
          />
        </Field>
        <NumberField label="channel" value={state.channel} onCommit={(channel) => set({ channel })} />
      </form>
      {timeline.state === 'failed' && <Failure error={timeline.error} />}
      {timeline.state === 'loading' && <Loading />}
      {timeline.state === 'ready' && <TimelineBody doc={timeline.data} />}
    </section>
  );
}

function TimelineBody({ doc }: { doc: TimelineDocument }) {
  const byRank = useMemo(() => {
    const map = new Map<number, TimelineStep[]>();
    for (const step of doc.steps) (map.get(step.rank) ?? map.set(step.rank, []).get(step.rank)!).push(step);
    return [...map].sort((a, b) => a[0] - b[0]);
  }, [doc]);
  const stepCount = Math.max(0, ...byRank.map(([, steps]) => steps.length));
  const [cursor, setCursor] = useState(0);
  const current = Math.min(cursor, Math.max(0, stepCount - 1));
  const exportTrace = () => {
    const blob = new Blob([JSON.stringify(chromeTrace(doc))], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `tsccl-timeline-${doc.topology}-${doc.op}-${doc.algorithm}.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  return (
    <>
      <p class="summary" data-testid="timeline-summary">
        {doc.op} of {formatBytes(doc.bytes)} on {doc.topology}, {doc.ranks} ranks: {doc.algorithm} {doc.protocol},
        predicted {formatUs(doc.timeUs)}; channel {doc.channel} of {doc.channels}; {stepCount} steps per rank
      </p>
      <fieldset class="stepper">
        <legend class="hidden">step through the collective</legend>
        <button type="button" onClick={() => setCursor(Math.max(0, current - 1))} disabled={current === 0}>
          ◀ previous step
        </button>
        <input
          type="range"
          min={0}
          max={Math.max(0, stepCount - 1)}
          value={current}
          aria-label="step"
          onInput={(e) => setCursor(Number(e.currentTarget.value))}
        />
        <button
          type="button"
          onClick={() => setCursor(Math.min(stepCount - 1, current + 1))}
          disabled={current >= stepCount - 1}
        >
          next step ▶
        </button>
        <span aria-live="polite" data-testid="step-label">
          step {current + 1} of {stepCount}
        </span>
        <button type="button" onClick={exportTrace}>
          export Chrome/Perfetto trace
        </button>
      </fieldset>
      <RankLanes byRank={byRank} timeUs={doc.timeUs} current={current} />
      <StepTable byRank={byRank} current={current} />
      <LinkCharts doc={doc} markUs={byRank[0]?.[1][current]} />
    </>
  );
}

function RankLanes({
  byRank,
  timeUs,
  current,
}: {
  byRank: [number, TimelineStep[]][];
  timeUs: number;
  current: number;
}) {
  const width = 900;
  const lane = 18;
  const left = 60;
  const scale = (us: number) => left + ((width - left - 10) * us) / timeUs;
  return (
    <svg
      class="lanes"
      width={width}
      height={byRank.length * lane + 30}
      role="img"
      aria-label="steps of each rank over time (predicted)"
    >
      {byRank.map(([rank, steps], i) => (
        <g key={rank} transform={`translate(0, ${i * lane})`}>
          <text x={4} y={lane - 5} class="lane-label">
            rank {rank}
          </text>
          {steps.map((s) => {
            const closing = s.ops[s.ops.length - 1];
            return (
              <rect
                key={s.index}
                x={scale(s.startUs)}
                y={2}
                width={Math.max(1, scale(s.endUs) - scale(s.startUs))}
                height={lane - 4}
                fill={KIND_COLORS[closing.kind]}
                opacity={s.index === current ? 1 : 0.45}
                stroke={s.index === current ? 'var(--fg)' : 'var(--bg)'}
              >
                <title>
                  step {s.index + 1}:{' '}
                  {s.ops
                    .map((op) => `${op.kind}${op.peer >= 0 ? ` ${op.peer}` : ''} [${op.offset}, +${op.count})`)
                    .join(', ')}{' '}
                  {formatUs(s.startUs)}–{formatUs(s.endUs)}
                </title>
              </rect>
            );
          })}
        </g>
      ))}
      <text x={left} y={byRank.length * lane + 20} class="lane-label">
        0 µs
      </text>
      <text x={width - 10} y={byRank.length * lane + 20} text-anchor="end" class="lane-label">
        {formatUs(timeUs)} (predicted)
      </text>
    </svg>
  );
}

function StepTable({ byRank, current }: { byRank: [number, TimelineStep[]][]; current: number }) {
  return (
    <table data-testid="step-table">
      <thead>
        <tr>
          <th scope="col">rank</th>
          <th scope="col">steps</th>
          <th scope="col">step {current + 1}: what it moves</th>
          <th scope="col">from – to</th>
        </tr>
      </thead>
      <tbody>
        {byRank.map(([rank, steps]) => {
          const s = steps[current];
          return (
            <tr key={rank}>
              <th scope="row">{rank}</th>
              <td>{steps.length}</td>
              <td>
                {s?.ops
                  .map(
                    (op) =>
                      `${op.kind === 'recvReduce' ? 'receive and reduce' : op.kind === 'recv' ? 'receive' : op.kind}${op.peer >= 0 ? ` ${op.kind === 'send' ? 'to' : 'from'} ${op.peer}` : ''}: elements ${op.offset}–${op.offset + op.count} (${formatBytes(op.bytes)})`,
                  )
                  .join('; ')}
              </td>
              <td>{s === undefined ? '' : `${formatUs(s.startUs)} – ${formatUs(s.endUs)}`}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function LinkCharts({ doc, markUs }: { doc: TimelineDocument; markUs: TimelineStep | undefined }) {
  const shown = doc.links.slice(0, LINKS_SHOWN);
  const data = shown.flatMap((link) => {
    const name = `${link.link}${link.link === doc.bottleneck ? ' (bottleneck)' : ''}`;
    const points = link.points.map(([timeUs, utilisation]) => ({ link: name, timeUs, utilisation }));
    return [...points, { link: name, timeUs: doc.timeUs, utilisation: points[points.length - 1]?.utilisation ?? 0 }];
  });
  const options: Plot.PlotOptions = {
    width: 900,
    height: 70 * shown.length + 40,
    marginLeft: 60,
    marginRight: 220,
    x: { label: 'time (µs, predicted) →', domain: [0, doc.timeUs] },
    y: { label: 'utilisation', domain: [0, 1], ticks: 2, tickFormat: (u: number) => formatPercent(u) },
    fy: { label: null },
    marks: [
      Plot.areaY(data, {
        x: 'timeUs',
        y: 'utilisation',
        fy: 'link',
        curve: 'step-after',
        fill: '#d9822b',
        fillOpacity: 0.6,
      }),
      ...(markUs === undefined
        ? []
        : [Plot.ruleX([markUs.startUs, markUs.endUs], { stroke: 'var(--fg)', strokeDasharray: '3 3' })]),
      Plot.frame({ strokeOpacity: 0.3 }),
    ],
  };
  return (
    <>
      <h2>
        Busiest links over the call (predicted); bottleneck:{' '}
        <span data-testid="bottleneck">{doc.bottleneck ?? 'none'}</span>
      </h2>
      <PlotFigure options={options} label="utilisation of the busiest links over time" />
      <table>
        <thead>
          <tr>
            <th scope="col">link</th>
            <th scope="col">kind</th>
            <th scope="col">capacity</th>
            <th scope="col">bytes</th>
            <th scope="col">utilisation over the call</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((l) => (
            <tr key={l.index}>
              <th scope="row">{l.link}</th>
              <td>{l.kind}</td>
              <td>{l.capacityGBps.toFixed(1)} GB/s</td>
              <td>{formatBytes(l.bytes)}</td>
              <td>{formatPercent(l.utilisation)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
