import type cytoscape from 'cytoscape';
import { useMemo, useState } from 'preact/hooks';
import type { LinksDocument } from '../../../src/sim/sim-documents.js';
import type { Topology } from '../../../src/topology/topology-schema.js';
import { type ViewState, apiUrl } from '../../../src/ui/view-state.js';
import type { SetState } from '../app.js';
import { Failure, Field, Loading, NumberField, type Presets, SizeField, TopologyPicker } from '../controls.js';
import { CytoscapeGraph } from '../cytoscape-graph.js';
import { formatBytes, formatPercent, formatUs } from '../format.js';
import { layoutTopology } from '../topology-layout.js';
import { useApi } from '../use-api.js';

interface TopologyDocument {
  readonly accelerators: number;
  readonly topology: Topology;
}

/** Grey when idle, then from amber to red as a link's utilisation rises. */
function utilisationColor(u: number | undefined): string {
  if (u === undefined || u <= 0) return '#9aa3ad';
  const t = Math.min(1, u);
  const hue = 45 - 45 * t;
  return `hsl(${hue}, 85%, ${50 - 8 * t}%)`;
}

/** Devices and links of a topology, links coloured by the traffic of a parallel layout's groups. */
export function TopologyView({ state, set }: { state: ViewState; set: SetState }) {
  const presets = useApi<Presets>(apiUrl('presets', state));
  const topology = useApi<TopologyDocument>(apiUrl('topology', state));
  const links = useApi<LinksDocument>(apiUrl('links', state));
  const [renderMs, setRenderMs] = useState<number>();
  // Since the page began loading: the time to first render a benchmark reads (bench/ui/first-render.mjs).
  const [sincePageStartMs, setSincePageStartMs] = useState<number>();
  const elements = useMemo(() => {
    if (topology.state !== 'ready') return [];
    return graphElements(topology.data.topology, links.state === 'ready' ? links.data : undefined);
  }, [topology, links]);
  return (
    <section class="view">
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <TopologyPicker state={state} set={set} presets={presets} />
        <NumberField label="TP size" min={1} value={state.tp} onCommit={(tp) => set({ tp })} />
        <NumberField label="PP size" min={1} value={state.pp} onCommit={(pp) => set({ pp })} />
        <NumberField label="DP size (0: fill)" value={state.dp} onCommit={(dp) => set({ dp })} />
        <Field label="groups shown">
          <select value={state.group} onChange={(e) => set({ group: e.currentTarget.value as ViewState['group'] })}>
            <option value="tp">tensor parallel (all-reduce)</option>
            <option value="dp">data parallel (all-reduce)</option>
            <option value="pp">pipeline neighbours (send/recv)</option>
          </select>
        </Field>
        <Field label="or explicit groups (0,1,2,3;4,5,6,7)">
          <input
            type="text"
            value={state.ranks}
            onChange={(e) => set({ ranks: e.currentTarget.value.replace(/\s/g, '') })}
          />
        </Field>
        <SizeField label="bytes per group" value={state.size} onCommit={(size) => set({ size })} />
      </form>
      {topology.state === 'failed' && <Failure error={topology.error} />}
      {topology.state === 'loading' && <Loading />}
      {topology.state === 'ready' && (
        <>
          <p class="summary" data-testid="topology-summary" data-since-page-start-ms={sincePageStartMs}>
            {topology.data.topology.name}: {topology.data.accelerators} accelerators,{' '}
            {topology.data.topology.devices.length} devices, {topology.data.topology.links.length} link bundles
            {renderMs !== undefined && <> · drawn in {renderMs.toFixed(0)} ms</>}
          </p>
          <CytoscapeGraph
            elements={elements}
            label={`devices and links of ${topology.data.topology.name}, coloured by predicted utilisation`}
            onRendered={(ms) => {
              setRenderMs(ms);
              setSincePageStartMs((first) => first ?? performance.now());
            }}
          />
          <p class="legend">
            Links coloured by predicted utilisation (grey dashed: idle; amber to red: 0 to 100 % of sustained
            bandwidth); width grows with the links bundled.
          </p>
        </>
      )}
      {links.state === 'failed' && <Failure error={links.error} />}
      {links.state === 'loading' && topology.state === 'ready' && <Loading />}
      {links.state === 'ready' && <LinkTable doc={links.data} />}
    </section>
  );
}

function LinkTable({ doc }: { doc: LinksDocument }) {
  const families = [...new Set(doc.devices.flatMap((d) => Object.keys(d.total)))];
  return (
    <>
      <h2>
        Busy links per device (predicted): {doc.kind} groups of {doc.groups[0]?.length ?? 0}, {formatBytes(doc.bytes)}{' '}
        each
      </h2>
      <ul class="summary">
        {doc.rows.slice(0, 4).map((row, g) => (
          <li key={g}>
            group {g}: {row.algorithm} {row.protocol}, {formatUs(row.timeUs)}, bus bandwidth {row.busbwGBs.toFixed(1)}{' '}
            GB/s
          </li>
        ))}
      </ul>
      <table data-testid="link-table">
        <thead>
          <tr>
            <th scope="col">device</th>
            <th scope="col">group</th>
            {families.map((f) => (
              <th scope="col" key={f}>
                {f} links busy
              </th>
            ))}
            <th scope="col">peak utilisation</th>
            <th scope="col">bytes out</th>
          </tr>
        </thead>
        <tbody>
          {doc.devices.map((d) => (
            <tr key={d.device}>
              <th scope="row">{d.device}</th>
              <td>{d.group}</td>
              {families.map((f) => (
                <td key={f} data-family={f}>
                  {d.used[f] ?? 0}/{d.total[f] ?? 0}
                </td>
              ))}
              <td>{formatPercent(d.peakUtilisation)}</td>
              <td>{formatBytes(d.bytesOut)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function graphElements(topology: Topology, links: LinksDocument | undefined): cytoscape.ElementDefinition[] {
  const layout = layoutTopology(topology);
  // A device's label counts the busy links of its largest family (the scale-up links of an accelerator).
  const busy = new Map<string, { used: number; total: number }>();
  for (const d of links?.devices ?? []) {
    const family = Object.keys(d.total).sort((a, b) => d.total[b] - d.total[a])[0];
    busy.set(d.device, { used: d.used[family] ?? 0, total: d.total[family] ?? 0 });
  }
  const utilisation = new Map<string, number>();
  for (const l of links?.links ?? []) {
    const key = [l.from, l.to].sort().join('|');
    utilisation.set(key, Math.max(utilisation.get(key) ?? 0, l.utilisation));
  }
  const elements: cytoscape.ElementDefinition[] = layout.hosts.map((host) => ({
    data: { id: `host:${host}`, label: `server ${host}` },
  }));
  for (const d of layout.devices) {
    const b = busy.get(d.id);
    elements.push({
      data: {
        id: d.id,
        kind: d.kind,
        label: b === undefined ? d.id : `${d.id} ${b.used}/${b.total}`,
        ...(d.host === undefined ? {} : { parent: `host:${d.host}` }),
      },
      position: { x: d.x, y: d.y },
    });
  }
  topology.links.forEach((link, i) => {
    const u = utilisation.get([link.a, link.b].sort().join('|'));
    elements.push({
      data: {
        id: `link:${i}`,
        source: link.a,
        target: link.b,
        width: 1 + Math.log2(link.count) * 0.8,
        color: utilisationColor(u),
      },
      classes: u === undefined ? 'idle' : '',
    });
  });
  return elements;
}
