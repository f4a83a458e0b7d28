import * as Plot from '@observablehq/plot';
import { useMemo } from 'preact/hooks';
import type { CurvesDocument } from '../../../src/sim/sim-documents.js';
import { type ViewState, apiUrl } from '../../../src/ui/view-state.js';
import type { SetState } from '../app.js';
import {
  ChoiceField,
  Failure,
  FilePicker,
  Loading,
  ModeField,
  type Presets,
  TopologyPicker,
  usePickedFiles,
} from '../controls.js';
import { formatBytes, formatUs } from '../format.js';
import { PlotFigure } from '../plot-figure.js';
import { useApi } from '../use-api.js';

interface BenchRow {
  readonly op: string;
  readonly bytes: number;
  readonly timeUs: number;
  readonly busbwGBs: number;
  readonly algorithm?: string;
  readonly ranks: number;
  readonly inPlace: boolean;
}
interface BenchFile {
  readonly name: string;
  readonly doc: { tool: string; transport?: string; rows: BenchRow[] };
}

interface Point {
  readonly bytes: number;
  readonly timeUs: number;
  readonly busbwGBs: number;
  readonly series: string;
  /** The algorithm of a predicted curve, or the measured file's label: what the colour names. */
  readonly algorithm: string;
  readonly protocol: string;
  readonly kind: 'predicted' | 'chosen' | 'measured';
}

/** Predicted time and bus bandwidth against size for every algorithm and protocol, with measured bench files overlaid. */
export function CurvesView({ state, set }: { state: ViewState; set: SetState }) {
  const curves = useApi<CurvesDocument>(apiUrl('curves', state));
  const served = useApi<BenchFile[]>(apiUrl('bench', state));
  const presets = useApi<Presets>(apiUrl('presets', state));
  const { picked, refused, pick } = usePickedFiles((doc): BenchFile['doc'] => {
    const bench = doc as BenchFile['doc'];
    if (bench.tool !== 'tsccl bench' || !Array.isArray(bench.rows))
      throw new Error('not the output of tsccl bench --format json');
    return bench;
  });
  const bench = [...(served.state === 'ready' ? served.data : []), ...picked];
  const points = useMemo(() => {
    if (curves.state !== 'ready') return [];
    const predicted: Point[] = curves.data.series.flatMap((s) =>
      s.rows.map((r) => ({
        ...r,
        series: `predicted ${s.algorithm}/${s.protocol}`,
        algorithm: `predicted ${s.algorithm}`,
        protocol: s.protocol,
        kind: 'predicted' as const,
      })),
    );
    const chosen: Point[] = curves.data.best.map((r) => ({
      ...r,
      series: `predicted: simulator’s choice (${r.algorithm}/${r.protocol})`,
      algorithm: '',
      protocol: '',
      kind: 'chosen',
    }));
    const measured: Point[] = bench.flatMap((file) =>
      file.doc.rows
        .filter((r) => r.op === curves.data.op && !r.inPlace && r.timeUs > 0)
        .map((r) => ({
          bytes: r.bytes,
          timeUs: r.timeUs,
          busbwGBs: r.busbwGBs,
          series: `measured: ${file.name}`,
          algorithm: `measured: ${file.name}`,
          protocol: '',
          kind: 'measured' as const,
        })),
    );
    return [...predicted, ...chosen, ...measured].filter((p) => p.bytes > 0);
  }, [curves, served, picked]);
  const dashes: Record<string, string> = { Simple: 'none', LL128: '7 3', LL: '2 2' };
  const protocols = [...new Set(points.map((p) => p.protocol).filter((p) => p !== ''))];
  const chart = (y: 'busbwGBs' | 'timeUs', label: string): Plot.PlotOptions => ({
    width: 900,
    height: 360,
    marginLeft: 60,
    x: { type: 'log', label: 'message size (bytes) →', tickFormat: (b: number) => formatBytes(b) },
    y: {
      type: 'log',
      label: `↑ ${label}`,
      grid: true,
      tickFormat: (v: number) => (v >= 1 ? String(v) : v.toPrecision(1)),
    },
    color: { legend: true, type: 'categorical', scheme: 'tableau10' },
    marks: [
      // Colour names the algorithm, the dash its protocol; the simulator's choice is the thick line.
      ...protocols.map((protocol) =>
        Plot.line(
          points.filter((p) => p.kind === 'predicted' && p.protocol === protocol),
          {
            x: 'bytes',
            y,
            z: 'series',
            stroke: 'algorithm',
            strokeDasharray: dashes[protocol] ?? 'none',
            strokeWidth: 1.3,
          },
        ),
      ),
      Plot.line(
        points.filter((p) => p.kind === 'chosen'),
        { x: 'bytes', y, stroke: 'var(--fg)', strokeWidth: 3, strokeOpacity: 0.45 },
      ),
      Plot.line(
        points.filter((p) => p.kind === 'measured'),
        { x: 'bytes', y, z: 'series', stroke: 'series', strokeDasharray: '4 3' },
      ),
      Plot.dot(
        points.filter((p) => p.kind === 'measured'),
        { x: 'bytes', y, stroke: 'series', r: 3.5, symbol: 'square' },
      ),
      Plot.tip(
        points,
        Plot.pointer({
          x: 'bytes',
          y,
          title: (p: Point) =>
            `${p.series}\n${formatBytes(p.bytes)}: ${formatUs(p.timeUs)}, ${p.busbwGBs.toFixed(2)} GB/s`,
        }),
      ),
    ],
  });
  return (
    <section class="view">
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <TopologyPicker state={state} set={set} presets={presets} />
        <ChoiceField
          label="collective"
          value={state.op}
          choices={presets.state === 'ready' ? presets.data.ops : undefined}
          onChange={(op) => set({ op })}
        />
        <ModeField state={state} set={set} />
        <FilePicker label="overlay tsccl bench --format json files" pick={pick} refused={refused} />
      </form>
      {curves.state === 'failed' && <Failure error={curves.error} />}
      {curves.state === 'loading' && <Loading />}
      {curves.state === 'ready' && (
        <>
          <p class="summary" data-testid="curves-summary">
            {curves.data.op} on {curves.data.topology}, {curves.data.ranks} ranks: {curves.data.series.length} predicted
            algorithm/protocol curves ({curves.data.mode} model)
            {bench.length > 0 && <>, {bench.length} measured file(s)</>}
          </p>
          <p class="legend">
            Colour: algorithm (predicted) or bench file (measured, squares). Dash: protocol (solid Simple, long dashes
            LL128, short dashes LL). Thick grey line: what the simulator picks at each size.
          </p>
          <PlotFigure options={chart('busbwGBs', 'bus bandwidth (GB/s)')} label="bus bandwidth against message size" />
          <PlotFigure options={chart('timeUs', 'time per call (µs)')} label="time per call against message size" />
        </>
      )}
      {bench.length > 0 && <MeasuredTable files={bench} />}
    </section>
  );
}

function MeasuredTable({ files }: { files: readonly BenchFile[] }) {
  return (
    <>
      <h2>Measured rows</h2>
      <table data-testid="measured-table">
        <thead>
          <tr>
            <th scope="col">file</th>
            <th scope="col">op</th>
            <th scope="col">ranks</th>
            <th scope="col">size</th>
            <th scope="col">in place</th>
            <th scope="col">time</th>
            <th scope="col">bus bandwidth</th>
            <th scope="col">algorithm</th>
          </tr>
        </thead>
        <tbody>
          {files.flatMap((file) =>
            file.doc.rows.map((r, i) => (
              <tr key={`${file.name}:${i}`}>
                <th scope="row">{file.name}</th>
                <td>{r.op}</td>
                <td>{r.ranks}</td>
                <td>{formatBytes(r.bytes)}</td>
                <td>{r.inPlace ? 'yes' : 'no'}</td>
                <td>{formatUs(r.timeUs)}</td>
                <td>{r.busbwGBs.toFixed(2)} GB/s</td>
                <td>{r.algorithm ?? ''}</td>
              </tr>
            )),
          )}
        </tbody>
      </table>
    </>
  );
}
