import * as Plot from '@observablehq/plot';
import { useEffect, useRef } from 'preact/hooks';

/** An Observable Plot chart, redrawn when its options change. */
export function PlotFigure({ options, label }: { options: Plot.PlotOptions; label: string }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const chart = Plot.plot({ style: { background: 'transparent', color: 'var(--fg)' }, ...options });
    chart.setAttribute('aria-label', label);
    chart.setAttribute('role', 'img');
    ref.current!.replaceChildren(chart);
    return () => chart.remove();
  }, [options, label]);
  return <div class="figure" ref={ref} />;
}
