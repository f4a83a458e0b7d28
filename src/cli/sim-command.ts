import { writeFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { chromeTrace } from '../sim/chrome-trace.js';
import { type TimelineDocument, collectiveTimeline } from '../sim/timeline.js';
import { BENCH_OPS, BENCH_OP_NAMES, benchOp, hasInPlace, parseSize, sweepSizes } from '../algorithms/bench-ops.js';
import { invalidArgument } from '../errors.js';
import { formatSimTable } from '../sim/format-sim.js';
import type { GroupKind } from '../sim/link-usage.js';
import {
  type LayoutRequest,
  type TrainRequest,
  groupsOfLayout,
  linksDocument,
  parseGroups,
  tableRow,
  trainDocument,
  traceReplayDocument,
} from '../sim/sim-documents.js';
import { protocolsFrom } from '../sim/protocols.js';
import { FlowBudgetExceeded } from '../sim/sim-call.js';
import {
  type SimMode,
  type SimRequest,
  type SimRow,
  choosesAsAws,
  choosesAsNccl,
  ranksRunTsccl,
  simulateRow,
} from '../sim/simulate.js';
import { SimProgress } from './sim-progress.js';
import { type FaultSpec, describeFaults, parseFaults } from '../sim/fault-spec.js';
import { planFaults, simulateWithFaults } from '../sim/fault-cost.js';
import { type FaultyRow, faultHeader, formatFaultTable } from '../sim/format-faults.js';
import { simulateCompressedRow } from '../sim/compressed-row.js';
import { type CompressionSpec, compressionLabel, parseCompression } from '../compress/compression-spec.js';
import { measureCodecGBps } from '../bench/codec-speed.js';
import { readModelFile } from '../sim/model-file.js';
import { readTraceFile } from '../sim/trace-file.js';
import type { ReplayReport } from '../sim/trace-replay.js';
import { DEFAULT_BUCKET_BYTES, DEFAULT_MFU, MODELS, type TrainingTimeline } from '../sim/training.js';
import { loadTopology } from '../topology/load-topology.js';
import { TopologyGraph } from '../topology/topology-graph.js';
import { tscclChooser } from '../tuner/sim-chooser.js';
import { guard, parseFraction, parseNonNegativeInt, parsePositiveInt, parseStepFactor } from './parse.js';
import { inSimWorker, runSimInWorker, stderrIsTerminal } from './sim-worker.js';
import { addTopologyOptions, presetOptions } from './topology-options.js';

/** Above this many ranks `--mode auto` uses the analytical model. */
const FLOW_MODE_MAX_RANKS = 2048;
/** What `--mode auto` lets a row take on the flow engine before the analytical model answers it. */
const DEFAULT_FLOW_BUDGET_S = 10;

const write = (text: string) => process.stdout.write(`${text}\n`);

export function simCommand(
  program: Command,
  format: () => Option,
  argv: string[],
  setExitCode: (code: number) => void,
): void {
  const sim = addTopologyOptions(
    program
      .command('sim')
      .description(
        'predict collectives on a modelled cluster (nccl-tests table); `sim links`, `sim train`, `sim timeline`',
      )
      .argument(
        '[what]',
        'nothing for the table, "links" for per-device link use, "train" for a training step, "timeline" for one call step by step',
      )
      .requiredOption('--topo <topology>', 'preset name or topology .json file')
      .option(
        '-o, --op <op>',
        `collective: ${BENCH_OP_NAMES.join(', ')}`,
        (v) => guard(() => benchOp(v).name),
        'all_reduce',
      )
      .option('-b, --minbytes <size>', 'smallest size', (v) => guard(() => parseSize(v, '--minbytes')), 8)
      .option('-e, --maxbytes <size>', 'largest size', (v) => guard(() => parseSize(v, '--maxbytes')), 1024 ** 3)
      .option('-f, --stepfactor <factor>', 'multiply the size by this between rows', parseStepFactor, 2)
      .option(
        '-i, --stepbytes <size>',
        'add this between rows when the factor is 1',
        (v) => guard(() => parseSize(v, '--stepbytes')),
        1024 * 1024,
      )
      .option('-r, --root <rank>', 'root of rooted collectives', (v) => parseNonNegativeInt(v, '--root'), 0)
      .option('--algo <name>', 'run this algorithm instead of the fastest predicted')
      .option('--proto <list>', 'protocols to consider: LL, LL128, Simple (comma separated)')
      .addOption(
        new Option('--nvls <on|off>', 'in-switch reduction where the switch has it')
          .choices(['on', 'off'])
          .default('on'),
      )
      .addOption(
        new Option('--mode <mode>', 'flow engine, analytical model, or auto (flow up to 2048 ranks)')
          .choices(['auto', 'flow', 'analytical'])
          .default('auto'),
      )
      .option(
        '--in-place',
        "time in-place calls (the input is the output, as torch.distributed's): ranks that run tsccl run other schedules in place",
      )
      .option('--links', 'also print the per-link utilisation of the largest size')
      .option(
        '--flow-budget <seconds>',
        '--mode auto: seconds a row may take on the flow engine (or be predicted by its pace to take) before it is answered by the analytical model',
        (v) => parseNonNegativeInt(v, '--flow-budget'),
        DEFAULT_FLOW_BUDGET_S,
      )
      .option(
        '--progress',
        "print the flow engine's progress on stderr (default: on a terminal, for rows past a second)",
      )
      .option(
        '--channel <n>',
        'timeline: the channel whose steps are listed',
        (v) => parseNonNegativeInt(v, '--channel'),
        0,
      )
      .option('--chrome-trace <file>', 'timeline: also write the timeline as a Chrome/Perfetto trace')
      .option(
        '--compression <format>',
        'price the call (train: the data-parallel gradient reduction) compressed on the wire: fp16, bf16, fp8e4m3, fp8e5m2, int8, int4',
        (v) => guard(() => parseCompression(v, { argument: '--compression' }).format),
      )
      .option('--compression-block <n>', 'elements per scale of the blockwise formats', (v) =>
        parsePositiveInt(v, '--compression-block'),
      )
      .option(
        '--codec-gbps <GB/s>',
        `the codecs' speed, GB/s of values per pass (default: measured now where ranks run tsccl, else ${ACCELERATOR_CODEC_GBPS})`,
        (v) => parsePositiveInt(v, '--codec-gbps'),
      )
      .option(
        '--faults <spec>',
        'table/train: price recovery from faults, e.g. "ber=1e-9" or "down=n0.nic0,at=0.5" (items: ber, down, at, detect, retries, frame, window)',
        (v) => guard(() => parseFaults(v)),
      )
      .option('--tp <n>', 'links/train: tensor-parallel size', (v) => parsePositiveInt(v, '--tp'), 1)
      .option('--pp <n>', 'links/train: pipeline-parallel size', (v) => parsePositiveInt(v, '--pp'), 1)
      .option('--dp <n>', 'links/train: data-parallel size (train: default fills the topology)', (v) =>
        parsePositiveInt(v, '--dp'),
      )
      .option('--ep <n>', 'train: expert-parallel size', (v) => parsePositiveInt(v, '--ep'), 1)
      .addOption(
        new Option('--group <kind>', 'links: which groups communicate').choices(['tp', 'dp', 'pp']).default('tp'),
      )
      .option('--ranks <lists>', 'links: explicit groups, e.g. "0,1,2,3;4,5,6,7"')
      .option(
        '--size <size>',
        'links: bytes each group moves; timeline: bytes of the call',
        (v) => guard(() => parseSize(v, '--size')),
        64 * 1024 ** 2,
      )
      .option('--model <name>', `train: ${Object.keys(MODELS).join(', ')}`, 'gpt3-175b')
      .option(
        '--model-file <path>',
        "train: a model's shape as JSON, in place of --model (tsccl/train's modelSpec writes one)",
      )
      .option(
        '--trace <file>',
        "train: replay a measured run's trace (tsccl/train's writeTrace) with every collective priced on --topo; prints each group's exposed communication, predicted beside measured",
      )
      .option('--micro-batch <n>', 'train: sequences per micro-batch', (v) => parsePositiveInt(v, '--micro-batch'), 1)
      .option('--global-batch <n>', 'train: sequences per step (default: 8 micro-batches per pipeline)', (v) =>
        parsePositiveInt(v, '--global-batch'),
      )
      .option(
        '--grad-bytes <n>',
        'train: bytes per gradient element in the DP reduction',
        (v) => parsePositiveInt(v, '--grad-bytes'),
        2,
      )
      .option('--sequence-parallel', 'train: TP uses all-gather + reduce-scatter')
      .option(
        '--mfu <fraction>',
        `train: model FLOPs utilisation of the step's compute (default ${DEFAULT_MFU})`,
        (v) => parseFraction(v, '--mfu'),
        DEFAULT_MFU,
      )
      .option(
        '--bucket-mb <n>',
        `train: gradient bucket of the data-parallel reduction, MiB (default ${DEFAULT_BUCKET_BYTES / 2 ** 20}, as PyTorch DDP)`,
        (v) => parsePositiveInt(v, '--bucket-mb'),
        DEFAULT_BUCKET_BYTES / 2 ** 20,
      ),
  ).addOption(format());
  sim.action(async (what: string | undefined, flags: Record<string, unknown>) => {
    const topology = loadTopology(flags.topo as string, presetOptions(flags));
    const graph = new TopologyGraph(topology);
    const ranks = graph.accelerators;
    const mode: SimMode =
      flags.mode === 'auto' ? (ranks.length > FLOW_MODE_MAX_RANKS ? 'analytical' : 'flow') : (flags.mode as SimMode);
    // Only the flow engine needs the worker's large young generation (`sim links` always runs it).
    if ((mode === 'flow' || what === 'links' || what === 'timeline') && !inSimWorker()) {
      setExitCode(await runSimInWorker(argv));
      return;
    }
    const nvls = flags.nvls === 'on';
    const json = flags.format === 'json';
    const compression = compressionPricing(flags, graph, ranks);
    const faults = flags.faults === undefined ? undefined : planFaults(flags.faults as FaultSpec, graph);
    if (what === undefined) {
      const op = flags.op as SimRow['op'];
      const inPlace = flags.inPlace === true;
      if (inPlace && !hasInPlace(BENCH_OPS[op]))
        throw invalidArgument(
          `--in-place does not apply to ${op}: a rank cannot send from and receive into one buffer at once`,
          {
            argument: '--in-place',
          },
        );
      if (BENCH_OPS[op].rooted && (flags.root as number) >= ranks.length)
        throw invalidArgument(`--root ${flags.root as number} must be below the ${ranks.length} ranks`, {
          argument: '--root',
        });
      const protocols = protocolsFrom(flags.proto as string | undefined, topology);
      const started = performance.now();
      const sizes = sweepSizes(
        flags.minbytes as number,
        flags.maxbytes as number,
        flags.stepfactor as number,
        flags.stepbytes as number,
      );
      // --mode auto gives the flow engine a budget per row; a row past it, and every larger one,
      // takes the analytical model, and the header says so.
      const budgetMs = flags.mode === 'auto' ? (flags.flowBudget as number) * 1000 : undefined;
      const progress = new SimProgress({ terminal: stderrIsTerminal(), always: flags.progress === true });
      let rowMode = mode;
      let fellBackAt: number | undefined;
      let predictedMs: number | undefined;
      const rows: SimRow[] = [];
      for (const [index, bytes] of sizes.entries()) {
        const simulateOn = (on: TopologyGraph, request: SimRequest) =>
          compression === undefined
            ? simulateRow(on, ranks, request)
            : simulateCompressedRow(on, ranks, {
                ...request,
                compression: compression.spec,
                codecGBps: compression.codecGBps,
              });
        const simulate = (request: SimRequest): SimRow =>
          faults === undefined
            ? simulateOn(graph, request)
            : simulateWithFaults(faults, graph, ranks, (on) => simulateOn(on, request));
        const request: SimRequest = {
          op,
          bytes,
          ...(flags.algo === undefined ? {} : { algorithm: flags.algo as string }),
          ...(protocols === undefined ? {} : { protocols }),
          mode: rowMode,
          nvls,
          elementBytes: 4,
          root: flags.root as number,
          chooser: tscclChooser,
          inPlace,
          ...(rowMode === 'flow'
            ? {
                watch: progress.row(
                  index,
                  sizes.length,
                  bytes,
                  budgetMs === undefined ? undefined : performance.now() + budgetMs,
                ),
              }
            : {}),
        };
        try {
          rows.push(simulate(request));
        } catch (err) {
          if (!(err instanceof FlowBudgetExceeded)) throw err;
          rowMode = 'analytical';
          fellBackAt = bytes;
          predictedMs = err.predictedMs;
          rows.push(simulate({ ...request, mode: 'analytical', watch: undefined }));
        } finally {
          progress.rowDone();
        }
      }
      const modeNote =
        fellBackAt === undefined
          ? null
          : predictedMs === undefined
            ? `analytical model from the ${fellBackAt} B row on: the flow engine did not finish it within --flow-budget ${flags.flowBudget as number} s (--mode flow waits for it)`
            : `analytical model from the ${fellBackAt} B row on: the flow engine would take about ${Math.ceil(predictedMs / 1000)} s for it (its pace over its first second), past --flow-budget ${flags.flowBudget as number} s (--mode flow waits for it)`;
      const seconds = (performance.now() - started) / 1000;
      if (json) {
        write(
          JSON.stringify(
            {
              tool: 'tsccl sim',
              topology: topology.name,
              library: topology.library ?? null,
              ranks: ranks.length,
              mode,
              modeNote,
              rows: rows.map((row) => tableRow(row, flags.links === true, inPlace)),
              simSeconds: seconds,
            },
            null,
            2,
          ),
        );
        return;
      }
      const chooser = chooserNote(graph, ranks, {
        op,
        mode,
        algo: flags.algo as string | undefined,
        nvls: flags.nvls === 'on',
      });
      write(
        formatSimTable(rows, [
          `tsccl sim ${op}${inPlace ? ' in place' : ''} on ${topology.name}: ${ranks.length} ranks, ${mode} model (predicted, not measured)`,
          `${chooser}; simulated in ${seconds.toFixed(2)} s`,
          ...(modeNote === null ? [] : [modeNote]),
          ...(compression === undefined
            ? []
            : [
                `compressed ${compressionLabel(compression.spec)}: byte phases simulated as the collectives they are, codecs at ${compression.codecGBps.toFixed(1)} GB/s per pass (${compression.source}), pipelined in pieces`,
              ]),
          ...(faults === undefined ? [] : faultHeader(faults)),
        ]),
      );
      if (faults !== undefined) write(formatFaultTable(rows as FaultyRow[]));
      if (flags.links && rows.length > 0) {
        const last = rows[rows.length - 1];
        write(`# links at ${last.bytes} B (utilisation = bytes / (sustained bandwidth x call time)):`);
        for (const l of last.links.slice(0, 40))
          write(
            `  ${l.link.padEnd(36)} ${l.kind.padEnd(10)} ${(l.utilisation * 100).toFixed(1).padStart(6)}%  ${(l.bytes / 1e6).toFixed(1)} MB`,
          );
      }
      return;
    }
    if (what === 'links') {
      const groups =
        flags.ranks !== undefined
          ? parseGroups(flags.ranks as string)
          : groupsOfLayout(layoutFlags(flags), flags.group as GroupKind, ranks.length);
      const report = linksDocument(graph, {
        groups,
        group: flags.group as GroupKind,
        bytes: flags.size as number,
        nvls,
        chooser: tscclChooser,
      });
      if (json) {
        write(JSON.stringify(report, null, 2));
        return;
      }
      write(
        `# tsccl sim links on ${topology.name}: ${flags.group as string} groups ${JSON.stringify(groups.slice(0, 8))}${groups.length > 8 ? ' ...' : ''}, ${report.bytes} B each`,
      );
      write(
        `#${'device'.padStart(16)}${'group'.padStart(7)}  links carrying traffic (used/total by family)      peak util`,
      );
      for (const d of report.devices) {
        const fams = Object.keys(d.total)
          .map((f) => `${f} ${d.used[f] ?? 0}/${d.total[f]}`)
          .join(', ');
        write(
          ` ${d.device.padStart(16)}${String(d.group).padStart(7)}  ${fams.padEnd(48)}${(d.peakUtilisation * 100).toFixed(0).padStart(8)}%`,
        );
      }
      for (const [g, row] of report.rows.entries())
        write(
          `# group ${g}: ${row.algorithm} ${row.protocol}, ${row.timeUs.toFixed(1)} us, busbw ${row.busbwGBs.toFixed(1)} GB/s`,
        );
      return;
    }
    if (what === 'train' && flags.trace !== undefined) {
      const report = traceReplayDocument(graph, readTraceFile(flags.trace as string), { mode, chooser: tscclChooser });
      if (json) write(JSON.stringify(report, null, 2));
      else writeReplay(write, report, flags.trace as string, topology.name);
      return;
    }
    if (what === 'train') {
      const model =
        flags.modelFile === undefined ? MODELS[flags.model as string] : readModelFile(flags.modelFile as string);
      if (model === undefined)
        throw invalidArgument(
          `--model ${flags.model as string} is not known: expected one of ${Object.keys(MODELS).join(', ')}`,
          { argument: '--model' },
        );
      const trainRequest: TrainRequest = {
        ...layoutFlags(flags),
        model,
        ep: flags.ep as number,
        microBatch: flags.microBatch as number,
        ...(flags.globalBatch === undefined ? {} : { globalBatch: flags.globalBatch as number }),
        gradBytes: flags.gradBytes as number,
        sequenceParallel: flags.sequenceParallel === true,
        mfu: flags.mfu as number,
        bucketBytes: (flags.bucketMb as number) * 2 ** 20,
        mode,
        nvls,
        chooser: tscclChooser,
        ...(compression === undefined ? {} : { compression }),
      };
      // Faults price every call of the step after the failure (the paths left, resends); the step
      // in which the failure happens also waits for it to be noticed.
      const trainFaults = faults === undefined ? undefined : { ...faults, spec: { ...faults.spec, at: 0 } };
      const report = trainDocument(graph, {
        ...trainRequest,
        ...(trainFaults === undefined ? {} : { faults: trainFaults }),
      });
      const clean = trainFaults === undefined ? undefined : trainDocument(graph, trainRequest);
      const faultSummary =
        clean === undefined || trainFaults === undefined
          ? undefined
          : {
              faults: describeFaults(trainFaults.spec),
              failedOver: Object.fromEntries(trainFaults.rebound),
              cleanCommUs: clean.totalUs,
              commUs: report.totalUs,
              ...(clean.step === undefined || report.step === undefined
                ? {}
                : { cleanStepUs: clean.step.stepUs, stepUs: report.step.stepUs }),
              ...(trainFaults.spec.down.length === 0 ? {} : { failingStepAddsUs: trainFaults.spec.detectMs * 1000 }),
            };
      const { tp, pp, dp } = report.layout;
      const microBatch = report.layout.microBatch;
      if (json) {
        write(JSON.stringify(faultSummary === undefined ? report : { ...report, faultSummary }, null, 2));
        return;
      }
      write(
        `# tsccl sim train: ${model.name} on ${topology.name}, tp ${tp} pp ${pp} dp ${dp} ep ${flags.ep as number}, ${report.microBatchesPerStep} micro-batches of ${microBatch} per step`,
      );
      // A space before every number column keeps a value wider than its column apart from the next.
      write(
        `#${'group'.padStart(6)}${'size'.padStart(6)}  ${'collective'.padEnd(15)} ${'calls'.padStart(6)} ${'MB/call'.padStart(9)} ${'us/call'.padStart(10)} ${'ms/step'.padStart(9)}  ${'algorithm'.padEnd(14)} bound by`,
      );
      for (const c of report.collectives) {
        write(
          ` ${c.group.padStart(6)}${String(c.groupSize).padStart(6)}  ${c.op.padEnd(15)} ${String(c.callsPerStep).padStart(6)} ${(c.bytesPerCall / 1e6).toFixed(2).padStart(9)} ${c.timePerCallUs.toFixed(1).padStart(10)} ${(c.timePerStepUs / 1000).toFixed(2).padStart(9)}  ${c.algorithm.padEnd(14)} ${c.bottleneck}`,
        );
        write(`#${''.padStart(14)}${c.purpose}`);
      }
      write(`# communication per step: ${(report.totalUs / 1000).toFixed(1)} ms if nothing overlaps`);
      writeStep(write, report.step);
      if (faultSummary !== undefined) writeFaultSummary(write, faultSummary);
      return;
    }
    if (what === 'timeline') {
      const timeline = collectiveTimeline(graph, ranks, {
        op: flags.op as SimRow['op'],
        bytes: flags.size as number,
        ...(flags.algo === undefined ? {} : { algorithm: flags.algo as string }),
        ...(flags.proto === undefined ? {} : { protocol: flags.proto as string }),
        nvls,
        root: flags.root as number,
        channel: flags.channel as number,
        chooser: tscclChooser,
      });
      if (flags.chromeTrace !== undefined)
        writeFileSync(flags.chromeTrace as string, JSON.stringify(chromeTrace(timeline)));
      if (json) {
        write(JSON.stringify(timeline, null, 2));
        return;
      }
      writeTimeline(write, timeline);
      return;
    }
    throw invalidArgument(`tsccl sim ${what}: expected nothing, "links", "train" or "timeline"`, { argument: 'what' });
  });
}

/** The header's line on who chose each row's algorithm. */
function chooserNote(
  graph: TopologyGraph,
  ranks: readonly number[],
  run: { op: string; mode: SimMode; algo: string | undefined; nvls: boolean },
): string {
  if (run.algo !== undefined) return `running --algo ${run.algo}`;
  if (run.mode === 'flow' && ranksRunTsccl(graph, ranks)) return "running what tsccl's tuner picks";
  if (run.op === 'all_reduce' && choosesAsAws(graph, ranks))
    return "running what AWS's tuner picks on P5 and P5en (aws-ofi-nccl's regions, NCCL's cost model outside them; --algo for any other)";
  if (run.op === 'all_reduce' && choosesAsNccl(graph, ranks, run.nvls))
    return "running what NCCL's own cost model picks (src/graph/tuning.cc; --algo for any other)";
  const library = graph.topology.library;
  return library !== undefined
    ? `choosing among the algorithms ${library.toUpperCase()} runs (--algo for any other)`
    : 'choosing among every algorithm';
}

const ms = (us: number) => (us / 1000).toFixed(1);

/** A timeline as text: each rank's steps on the channel shown, and the busiest links. */
function writeTimeline(write: (line: string) => void, t: TimelineDocument): void {
  write(
    `# tsccl sim timeline: ${t.op} of ${t.bytes} B on ${t.topology}, ${t.ranks} ranks, ${t.algorithm} ${t.protocol}, predicted ${t.timeUs.toFixed(1)} us; channel ${t.channel} of ${t.channels}`,
  );
  const byRank = new Map<number, TimelineDocument['steps'][number][]>();
  for (const step of t.steps) byRank.set(step.rank, [...(byRank.get(step.rank) ?? []), step]);
  for (const [rank, steps] of byRank) {
    const shown = steps
      .slice(0, 4)
      .map(
        (s) =>
          `${s.ops.map((o) => `${o.kind}${o.peer >= 0 ? `:${o.peer}` : ''}`).join('+')} ${s.startUs.toFixed(1)}-${s.endUs.toFixed(1)}`,
      );
    write(
      `  rank ${String(rank).padStart(4)}: ${steps.length} steps (${shown.join(', ')}${steps.length > 4 ? ', ...' : ''}) us`,
    );
  }
  write('# busiest links (utilisation over the call):');
  for (const l of t.links.slice(0, 8))
    write(`  ${l.link.padEnd(36)} ${l.kind.padEnd(10)} ${(l.utilisation * 100).toFixed(1).padStart(6)}%`);
}

/** A replayed trace: each group's waits per rank, measured and predicted. */
function writeReplay(write: (line: string) => void, r: ReplayReport, path: string, topology: string): void {
  write(
    `# tsccl sim train --trace ${path} on ${topology}: ${r.ranks} ranks, ${r.calls} collectives and ${r.messages} messages replayed, calls ${r.progress === 'engine' ? 'on progress engines' : r.progress === 'inline' ? "on the ranks' threads" : 'inline and on engines'}`,
  );
  write(
    `#${'group'.padStart(6)}${'rank'.padStart(6)}${'waits'.padStart(7)} ${'measured ms'.padStart(12)} ${'predicted ms'.padStart(13)} ${'pred/meas'.padStart(10)} ${'for peers ms'.padStart(13)} ${'in gc ms'.padStart(9)}`,
  );
  for (const g of r.groups)
    write(
      ` ${g.group.padStart(6)}${String(g.rank).padStart(6)}${String(g.waits).padStart(7)} ${g.measuredMs.toFixed(2).padStart(12)} ${g.predictedMs.toFixed(2).padStart(13)} ${(g.measuredMs > 0 ? (g.predictedMs / g.measuredMs).toFixed(2) : '-').padStart(10)} ${g.peersMs.toFixed(2).padStart(13)} ${g.collectionsMs.toFixed(2).padStart(9)}`,
    );
  write(
    "# for peers: the part of the predicted wait before the other ranks had issued its calls (their compute, as measured); in gc: after the calls ended, while the rank's thread collected garbage (as measured); the rest is the simulator's price of the calls",
  );
  const unpriced = Object.entries(r.unpriced);
  if (unpriced.length > 0)
    write(`# not priced (their waits keep the measured time): ${unpriced.map(([op, n]) => `${op} x${n}`).join(', ')}`);
  if (r.otherWaits > 0)
    write(`# ${r.otherWaits} waits for nothing the trace holds (a receive whose send is not in it) are not replayed`);
}

/** The step's timeline: compute, what communication leaves on it, and rank 0's gradient buckets. */
function writeStep(write: (line: string) => void, step: TrainingTimeline | undefined): void {
  if (step === undefined) {
    write('# step time: the topology gives no accelerator peak (bf16Tflops), so compute is not modelled');
    return;
  }
  write(
    `# compute per step: ${ms(step.computeUs)} ms (${step.tflops} TFLOPS x MFU ${step.mfu}, 6 FLOPs per active parameter and token, with the pipeline's idle slots)`,
  );
  const buckets = step.dpBuckets;
  if (buckets.length > 0) {
    write(
      `# data-parallel gradients: ${buckets.length} buckets, reduced while the last micro-batch's backward runs (${ms(step.backwardUs)} ms); timeline of every data-parallel rank, ms from that backward's start:`,
    );
    const shown = buckets.length <= 6 ? buckets : [...buckets.slice(0, 3), undefined, ...buckets.slice(-2)];
    for (const b of shown)
      write(
        b === undefined
          ? '#   ...'
          : `#   bucket of ${(b.bytes / 2 ** 20).toFixed(1)} MiB ready ${ms(b.readyUs)}, reduced ${ms(b.startUs)}-${ms(b.endUs)}`,
      );
  }
  write(
    `# step: compute ${ms(step.computeUs)} + TP/PP/EP communication ${ms(step.criticalCommUs)} + data-parallel left after backward ${ms(step.dpExposedUs)} = ${ms(step.stepUs)} ms (${ms(step.serialStepUs)} ms if no communication overlapped)`,
  );
}

function writeFaultSummary(
  write: (line: string) => void,
  summary: {
    faults: string;
    failedOver: Record<string, string>;
    cleanCommUs: number;
    commUs: number;
    cleanStepUs?: number;
    stepUs?: number;
    failingStepAddsUs?: number;
  },
): void {
  const moves = Object.entries(summary.failedOver);
  const change = (now: number, before: number) =>
    `${ms(now)} ms against ${ms(before)} ms clean (${before > 0 ? `${(((now - before) / before) * 100).toFixed(1)}%` : 'n/a'})`;
  write(`# with faults: ${summary.faults}`);
  if (moves.length > 0) write(`#   failed over: ${moves.map(([device, nic]) => `${device} -> ${nic}`).join(', ')}`);
  write(`#   communication per step ${change(summary.commUs, summary.cleanCommUs)}`);
  if (summary.stepUs !== undefined && summary.cleanStepUs !== undefined)
    write(`#   step ${change(summary.stepUs, summary.cleanStepUs)}`);
  if (summary.failingStepAddsUs !== undefined)
    write(`#   the step in which the failure happens also waits ${ms(summary.failingStepAddsUs)} ms to notice it`);
}

/** --tp, --pp and --dp as a layout request. */
function layoutFlags(flags: Record<string, unknown>): LayoutRequest {
  return {
    tp: flags.tp as number,
    pp: flags.pp as number,
    ...(flags.dp === undefined ? {} : { dp: flags.dp as number }),
  };
}

/**
 * What a codec pass costs an accelerator, GB/s of values: a quantising kernel reads 4 bytes and
 * writes 1-2 per value, so it runs at a fraction of device memory bandwidth (docs/SIMULATOR.md).
 */
const ACCELERATOR_CODEC_GBPS = 300;

/** --compression's spec and the codecs' speed: --codec-gbps, else measured here where the ranks run tsccl, else stated. */
function compressionPricing(
  flags: Record<string, unknown>,
  graph: TopologyGraph,
  ranks: readonly number[],
): { spec: CompressionSpec; codecGBps: number; source: string } | undefined {
  if (flags.compression === undefined) return undefined;
  const spec = parseCompression(
    {
      format: flags.compression,
      ...(flags.compressionBlock === undefined ? {} : { blockSize: flags.compressionBlock }),
    },
    { argument: '--compression' },
  );
  if (flags.codecGbps !== undefined) return { spec, codecGBps: flags.codecGbps as number, source: '--codec-gbps' };
  if (ranksRunTsccl(graph, ranks))
    return { spec, codecGBps: measureCodecGBps(spec), source: 'measured on this machine now' };
  return { spec, codecGBps: ACCELERATOR_CODEC_GBPS, source: 'stated for accelerators' };
}
