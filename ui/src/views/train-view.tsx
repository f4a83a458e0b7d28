import * as Plot from '@observablehq/plot';
import type { TrainDocument } from '../../../src/sim/sim-documents.js';
import { type RankProfile, traceProfile } from '../../../src/train/trace-profile.js';
import { type ViewState, apiUrl } from '../../../src/ui/view-state.js';
import type { SetState } from '../app.js';
import {
  ChoiceField,
  Failure,
  FilePicker,
  Loading,
  ModeField,
  NumberField,
  type Presets,
  TopologyPicker,
  usePickedFiles,
} from '../controls.js';
import { formatBytes, formatUs } from '../format.js';
import { PlotFigure } from '../plot-figure.js';
import { useApi } from '../use-api.js';

/** A training step as `sim train` predicts it: compute, exposed communication per group, the pipeline's bubble. */
export function TrainView({ state, set }: { state: ViewState; set: SetState }) {
  const train = useApi<TrainDocument>(apiUrl('train', state));
  const presets = useApi<Presets>(apiUrl('presets', state));
  return (
    <section class="view">
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <TopologyPicker state={state} set={set} presets={presets} />
        <ChoiceField
          label="model"
          value={state.model}
          choices={presets.state === 'ready' ? presets.data.models : undefined}
          onChange={(model) => set({ model })}
        />
        <NumberField label="TP size" min={1} value={state.tp} onCommit={(tp) => set({ tp })} />
        <NumberField label="PP size" min={1} value={state.pp} onCommit={(pp) => set({ pp })} />
        <NumberField label="DP size (0: fill)" value={state.dp} onCommit={(dp) => set({ dp })} />
        <ModeField state={state} set={set} />
      </form>
      {train.state === 'failed' && <Failure error={train.error} />}
      {train.state === 'loading' && <Loading />}
      {train.state === 'ready' && <TrainBody doc={train.data} />}
      <MeasuredRuns url={apiUrl('measured', state)} />
    </section>
  );
}

function TrainBody({ doc }: { doc: TrainDocument }) {
  const { tp, pp, dp } = doc.layout;
  const step = doc.step;
  const byGroup = new Map<string, number>();
  for (const c of doc.collectives) byGroup.set(c.group, (byGroup.get(c.group) ?? 0) + c.timePerStepUs);
  const exposed = (group: string) =>
    doc.collectives.filter((c) => c.group === group).reduce((sum, c) => sum + c.timePerStepUs, 0) / 1e3;
  const parts =
    step === undefined
      ? []
      : [
          { part: 'compute', ms: (step.computeUs - step.bubbleUs) / 1e3 },
          { part: 'pipeline bubble', ms: step.bubbleUs / 1e3 },
          { part: 'TP communication (exposed)', ms: exposed('tp') },
          { part: 'PP communication (exposed)', ms: exposed('pp') },
          { part: 'EP communication (exposed)', ms: exposed('ep') },
          { part: 'DP communication left after backward', ms: step.dpExposedUs / 1e3 },
        ].filter((p) => p.ms > 0);
  return (
    <>
      <p class="summary" data-testid="train-summary">
        {doc.model.name} on {doc.topology}: TP {tp} × PP {pp} × DP {dp}, {doc.microBatchesPerStep} micro-batches per
        step;{' '}
        {step === undefined
          ? `communication ${formatUs(doc.totalUs)} per step if nothing overlaps (the topology gives no accelerator peak, so compute is not modelled)`
          : `predicted step ${formatUs(step.stepUs)} (${formatUs(step.serialStepUs)} if no communication overlapped)`}
      </p>
      {step !== undefined && (
        <ul class="summary" data-testid="train-parts">
          {parts.map((p) => (
            <li key={p.part}>
              {p.part}: {p.ms.toFixed(1)} ms
            </li>
          ))}
        </ul>
      )}
      {step !== undefined && (
        <PlotFigure
          label="where a training step's time goes"
          options={{
            width: 900,
            height: 130,
            marginLeft: 10,
            x: { label: 'ms per step (predicted) →' },
            color: { legend: true, domain: parts.map((p) => p.part), scheme: 'tableau10' },
            marks: [
              Plot.barX(
                parts,
                Plot.stackX({
                  x: 'ms',
                  fill: 'part',
                  title: (d: { part: string; ms: number }) => `${d.part}: ${d.ms.toFixed(1)} ms`,
                }),
              ),
            ],
          }}
        />
      )}
      <h2>Communication per group (predicted, per step, if nothing overlapped)</h2>
      <PlotFigure
        label="communication time per group"
        options={{
          width: 900,
          height: 60 + 30 * byGroup.size,
          marginLeft: 60,
          x: { label: 'ms per step →' },
          y: { label: null },
          marks: [
            Plot.barX(
              [...byGroup].map(([group, us]) => ({ group, ms: us / 1e3 })),
              { x: 'ms', y: 'group', fill: '#3b6fb6' },
            ),
          ],
        }}
      />
      <table data-testid="train-table">
        <thead>
          <tr>
            <th scope="col">group</th>
            <th scope="col">size</th>
            <th scope="col">collective</th>
            <th scope="col">calls per step</th>
            <th scope="col">per call</th>
            <th scope="col">time per call</th>
            <th scope="col">per step</th>
            <th scope="col">algorithm</th>
            <th scope="col">bound by</th>
          </tr>
        </thead>
        <tbody>
          {doc.collectives.map((c, i) => (
            <tr key={i} title={c.purpose}>
              <th scope="row">{c.group}</th>
              <td>{c.groupSize}</td>
              <td>{c.op}</td>
              <td>{c.callsPerStep}</td>
              <td>{formatBytes(c.bytesPerCall)}</td>
              <td>{formatUs(c.timePerCallUs)}</td>
              <td>{formatUs(c.timePerStepUs)}</td>
              <td>{c.algorithm}</td>
              <td>{c.bottleneck}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

interface MeasuredTrace {
  readonly name: string;
  readonly trace: { traceEvents: Parameters<typeof traceProfile>[0]['traceEvents'] };
}

/** Measured training runs (tsccl/train's writeTrace): per rank, compute, waiting for communication, and the rest. */
function MeasuredRuns({ url }: { url: string }) {
  const served = useApi<MeasuredTrace[]>(url);
  const { picked, refused, pick } = usePickedFiles((doc): MeasuredTrace['trace'] => {
    const trace = doc as MeasuredTrace['trace'];
    if (!Array.isArray(trace.traceEvents)) throw new Error('not a Chrome trace (tsccl/train writeTrace writes one)');
    return trace;
  });
  const runs = [
    ...(served.state === 'ready' ? served.data : []),
    ...picked.map((p) => ({ name: p.name, trace: p.doc })),
  ];
  return (
    <>
      <h2>Measured runs</h2>
      <FilePicker
        label="add a training trace (tsccl/train writeTrace, Chrome trace JSON)"
        pick={pick}
        refused={refused}
      />
      {runs.map((run) => (
        <MeasuredRun key={run.name} name={run.name} profile={traceProfile(run.trace)} />
      ))}
    </>
  );
}

function MeasuredRun({ name, profile }: { name: string; profile: RankProfile[] }) {
  const comms = [...new Set(profile.flatMap((r) => r.comms.map((c) => c.name)))];
  const parts = profile.flatMap((r) => [
    { rank: `rank ${r.rank}`, part: 'compute', ms: r.computeMs },
    { rank: `rank ${r.rank}`, part: 'waiting for communication (exposed)', ms: r.waitMs },
    { rank: `rank ${r.rank}`, part: 'other (pipeline bubble, trainer)', ms: r.otherMs },
  ]);
  return (
    <article>
      <h3>measured: {name}</h3>
      <PlotFigure
        label={`measured time per rank in ${name}`}
        options={{
          width: 900,
          height: 60 + 28 * profile.length,
          marginLeft: 60,
          x: { label: 'ms (measured) →' },
          y: { label: null },
          color: { legend: true, scheme: 'tableau10' },
          marks: [Plot.barX(parts, Plot.stackX({ x: 'ms', y: 'rank', fill: 'part' }))],
        }}
      />
      <table data-testid="measured-train-table">
        <thead>
          <tr>
            <th scope="col">rank</th>
            <th scope="col">wall</th>
            <th scope="col">compute</th>
            <th scope="col">waiting for communication</th>
            <th scope="col">other</th>
            {comms.map((c) => (
              <th scope="col" key={c}>
                {c}: collectives (overlapping)
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {profile.map((r) => (
            <tr key={r.rank}>
              <th scope="row">{r.rank}</th>
              <td>{r.wallMs.toFixed(1)} ms</td>
              <td>{r.computeMs.toFixed(1)} ms</td>
              <td>{r.waitMs.toFixed(1)} ms</td>
              <td>{r.otherMs.toFixed(1)} ms</td>
              {comms.map((c) => {
                const comm = r.comms.find((x) => x.name === c);
                return <td key={c}>{comm === undefined ? '' : `${comm.calls} calls, ${comm.ms.toFixed(1)} ms`}</td>;
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </article>
  );
}
