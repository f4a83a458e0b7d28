// nccl-tests all-reduce on AWS p5 (8 H100 and 32 x 100 Gb/s EFA a node), 2 to 32 nodes, 32 MiB
// to 8 GiB, as published, against `tsccl sim`'s prediction (flow engine, NCCL's or AWS's choice
// of algorithm): busbw in GB/s, the prediction's error and its algorithm and protocol.
// Published: crazyguitar/aws-gpu-communication-benchmark, data/nccl_all_reduce.csv (SageMaker
// HyperPod ml.p5.48xlarge, out of place).
// Usage: node bench/sim/aws-p5-all-reduce.mjs [path to a built tsccl checkout, default this one]
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const root = resolve(process.argv[2] ?? fileURLToPath(new URL('../..', import.meta.url)));
const { buildPreset } = await import(`${root}/dist/src/topology/presets/presets.js`);
const { TopologyGraph } = await import(`${root}/dist/src/topology/topology-graph.js`);
const { simulateRow } = await import(`${root}/dist/src/sim/simulate.js`);

const MIB = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];
/** Out-of-place busbw, GB/s, by node count, at the sizes of MIB. */
const PUBLISHED = {
  2: [147.32, 207.0, 305.13, 364.46, 395.99, 435.14, 445.05, 465.81, 477.71],
  4: [95.38, 152.41, 229.48, 273.34, 278.41, 280.3, 347.57, 354.45, 356.99],
  8: [86.74, 103.85, 156.33, 232.09, 272.62, 274.47, 278.15, 351.32, 355.36],
  16: [74.85, 92.39, 129.2, 148.11, 223.8, 269.23, 270.91, 306.15, 356.27],
  32: [66.34, 83.6, 115.78, 137.99, 156.83, 220.08, 269.47, 302.81, 321.1],
};

const errors = [];
console.log(`# ${new Date().toISOString()}, ${root}`);
console.log('| nodes | size (MiB) | published | predicted | error | algorithm |');
console.log('|---:|---:|---:|---:|---:|---|');
for (const [nodes, published] of Object.entries(PUBLISHED)) {
  const graph = new TopologyGraph(
    buildPreset('dgx-h100', { nodes: Number(nodes), nicsPerNode: 32, nicGbps: 100, nicKind: 'efa' }),
  );
  const ranks = graph.accelerators;
  MIB.forEach((mib, i) => {
    const bytes = mib * 2 ** 20;
    const row = simulateRow(graph, ranks, {
      op: 'all_reduce',
      bytes,
      mode: 'flow',
      nvls: true,
      elementBytes: 4,
      root: 0,
    });
    const busbw = row.busbwGBs;
    const error = busbw / published[i] - 1;
    errors.push(Math.abs(error));
    console.log(
      `| ${nodes} | ${mib} | ${published[i]} | ${busbw.toFixed(1)} | ${(100 * error).toFixed(0)}% | ${row.algorithm} ${row.protocol} |`,
    );
  });
}
errors.sort((a, b) => a - b);
console.log(
  `# median |error| ${(100 * errors[errors.length >> 1]).toFixed(0)}%, within 10%: ${errors.filter((e) => e <= 0.1).length} of ${errors.length}`,
);
