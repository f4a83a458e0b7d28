import cytoscape from 'cytoscape';
import { useEffect, useRef } from 'preact/hooks';

/** A cytoscape graph with positions given (the preset layout), redrawn when its elements change; `onReady` reports the time to first render. */
export function CytoscapeGraph({
  elements,
  label,
  onRendered,
}: {
  elements: cytoscape.ElementDefinition[];
  label: string;
  onRendered?: (ms: number) => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const started = performance.now();
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue('--fg').trim() || '#222';
    const graph = cytoscape({
      container: ref.current!,
      elements,
      layout: { name: 'preset', fit: true, padding: 24 },
      style: [
        {
          selector: 'node',
          style: {
            label: 'data(label)',
            'font-size': 10,
            color: fg,
            'text-valign': 'bottom',
            'text-margin-y': 3,
            width: 26,
            height: 26,
            'background-color': '#7a8699',
          },
        },
        {
          selector: 'node[kind = "gpu"], node[kind = "npu"], node[kind = "core"]',
          style: { shape: 'round-rectangle', 'background-color': '#4c9a2a' },
        },
        { selector: 'node[kind = "switch"]', style: { shape: 'diamond', 'background-color': '#3b6fb6' } },
        { selector: 'node[kind = "nic"]', style: { shape: 'triangle', 'background-color': '#b07d1a' } },
        { selector: 'node[kind = "cpu"]', style: { shape: 'hexagon', 'background-color': '#8a5cb8' } },
        {
          selector: ':parent',
          style: {
            'background-opacity': 0.06,
            'border-color': fg,
            'border-width': 1,
            'text-valign': 'top',
            'font-size': 12,
            shape: 'round-rectangle',
          },
        },
        {
          selector: 'edge',
          style: {
            width: 'data(width)',
            'line-color': 'data(color)',
            'curve-style': 'straight',
            opacity: 0.85,
          },
        },
        { selector: 'edge.idle', style: { 'line-style': 'dashed', opacity: 0.35 } },
      ],
    });
    graph.ready(() => onRendered?.(performance.now() - started));
    // Labels follow the theme when it switches.
    const themeWatch = new MutationObserver(() => {
      const color = getComputedStyle(document.documentElement).getPropertyValue('--fg').trim();
      graph.style().selector('node').style('color', color).selector(':parent').style('border-color', color).update();
    });
    themeWatch.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => {
      themeWatch.disconnect();
      graph.destroy();
    };
  }, [elements]);
  return <div class="graph" ref={ref} role="img" aria-label={label} />;
}
