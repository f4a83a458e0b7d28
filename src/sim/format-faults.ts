import type { FaultCost, FaultPlan } from './fault-cost.js';
import { describeFaults } from './fault-spec.js';
import type { SimRow } from './simulate.js';

export type FaultyRow = SimRow & { readonly faults: FaultCost };

/** Header lines of a table with faults: what fails, and where the traffic goes instead. */
export function faultHeader(plan: FaultPlan): string[] {
  const lines = [
    `with faults: ${describeFaults(plan.spec)}; times below include recovery (resends priced as if each stalled its link: an upper bound)`,
  ];
  if (plan.rebound.size > 0) {
    const moves = [...plan.rebound].map(([device, nic]) => `${device} -> ${nic}`);
    lines.push(
      `failed over: ${moves.slice(0, 8).join(', ')}${moves.length > 8 ? ` and ${moves.length - 8} more` : ''}`,
    );
  }
  return lines;
}

/** Per row, the clean time, the time with faults, and what the recovery took. */
export function formatFaultTable(rows: readonly FaultyRow[]): string {
  const lines = [
    '# recovery per row:',
    `#${'size'.padStart(12)}${'clean'.padStart(12)}${'faults'.padStart(12)}${'cost'.padStart(8)}${'frame err'.padStart(11)}${'resent'.padStart(10)}${'resend'.padStart(12)}${'failover'.padStart(12)}${'P(fail)'.padStart(10)}`,
    `#${'(B)'.padStart(12)}${'(us)'.padStart(12)}${'(us)'.padStart(12)}${'(%)'.padStart(8)}${''.padStart(11)}${'(frames)'.padStart(10)}${'(us)'.padStart(12)}${'(us)'.padStart(12)}`,
  ];
  for (const r of rows) {
    const f = r.faults;
    const cost = f.cleanUs > 0 ? ((f.timeUs - f.cleanUs) / f.cleanUs) * 100 : 0;
    lines.push(
      ` ${String(r.bytes).padStart(12)}${us(f.cleanUs).padStart(12)}${us(f.timeUs).padStart(12)}${cost.toFixed(1).padStart(8)}${small(f.frameErrorRate).padStart(11)}${small(f.framesResent).padStart(10)}${us(f.resendUs).padStart(12)}${us(f.failoverUs).padStart(12)}${small(f.failProbability).padStart(10)}`,
    );
  }
  return lines.join('\n');
}

function us(value: number): string {
  if (!Number.isFinite(value)) return 'inf';
  return Math.abs(value) >= 1000 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** Probabilities and counts that span many orders of magnitude. */
function small(value: number): string {
  if (!Number.isFinite(value)) return 'inf';
  if (value === 0) return '0';
  return value >= 0.01 && value < 1e5 ? value.toPrecision(3) : value.toExponential(1);
}
