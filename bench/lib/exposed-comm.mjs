// Exposed communication of a data-parallel job, per step: from the moment the last rank's
// backward compute ended to the moment the last rank's wait for its gradients ended. A rank's
// own wait also holds its peers' longer compute, which is not communication; this does not.
// `results`: one per rank, each with `waitSpans`, [computeEnd, waitEnd] per step in epoch ms.

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

/** The median over the steps of the job-wide exposed communication, ms. */
export function exposedCommMs(results) {
  const perStep = results[0].waitSpans.map((_, step) => {
    const spans = results.map((r) => r.waitSpans[step]);
    return Math.max(...spans.map((s) => s[1])) - Math.max(...spans.map((s) => s[0]));
  });
  return median(perStep);
}
