import { constants as osConstants } from 'node:os';
import { type Command, Option } from 'commander';
import { launch } from '../launch/launch.js';
import type { RankOutcome } from '../launch/run.js';
import { parseNonNegativeInt, parsePositiveInt } from './parse.js';

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

export function launchCommand(program: Command, setExitCode: (code: number) => void): void {
  program
    .command('launch')
    .description(
      "start this node's ranks of a job, like torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT",
    )
    .requiredOption('--nproc-per-node <n>', 'ranks on this node', (v) => parsePositiveInt(v, '--nproc-per-node'))
    .option('--nnodes <n>', 'nodes in the job', (v) => parsePositiveInt(v, '--nnodes'), 1)
    .option('--node-rank <n>', "this node's index", (v) => parseNonNegativeInt(v, '--node-rank'), 0)
    .option('--master-addr <addr>', 'address of node 0, which serves the store', '127.0.0.1')
    .option('--master-port <port>', 'port of the store (default 29500 on several nodes, a free one on one)', (v) =>
      parseNonNegativeInt(v, '--master-port'),
    )
    .addOption(
      new Option('--mode <mode>', 'ranks as processes (TCP) or as threads of one process (shared memory)')
        .choices(['processes', 'threads'])
        .default('processes'),
    )
    .option(
      '--threads-per-proc <n>',
      'with processes: thread ranks per process, sharing memory inside it',
      (v) => parsePositiveInt(v, '--threads-per-proc'),
      1,
    )
    .option('--timeout-ms <ms>', 'default timeout of every collective call', (v) => parsePositiveInt(v, '--timeout-ms'))
    .argument('<script>', 'ES module to run on every rank')
    .argument('[args...]', 'passed to the script')
    .allowUnknownOption()
    .passThroughOptions()
    .action(
      async (
        script: string,
        args: string[],
        o: {
          nprocPerNode: number;
          nnodes: number;
          nodeRank: number;
          masterAddr: string;
          masterPort?: number;
          mode: 'processes' | 'threads';
          threadsPerProc: number;
          timeoutMs?: number;
        },
      ) => {
        // SIGTERM and SIGINT (what schedulers and Ctrl-C send) end the job: the ranks get SIGTERM, then SIGKILL after the grace.
        const stop = new AbortController();
        const onSignal = (signal: NodeJS.Signals) => stop.abort(signal);
        for (const signal of STOP_SIGNALS) process.once(signal, onSignal);
        let ranks: RankOutcome[];
        try {
          ({ ranks } = await launch({
            script,
            args,
            nprocPerNode: o.nprocPerNode,
            nnodes: o.nnodes,
            nodeRank: o.nodeRank,
            masterAddr: o.masterAddr,
            masterPort: o.masterPort,
            mode: o.mode,
            threadsPerProc: o.threadsPerProc,
            timeoutMs: o.timeoutMs,
            signal: stop.signal,
          }));
        } catch (err) {
          if (!stop.signal.aborted) throw err;
          const signal = stop.signal.reason as NodeJS.Signals;
          process.stderr.write(`tsccl launch: stopped by ${signal}; its ranks were told to end\n`);
          setExitCode(128 + osConstants.signals[signal]);
          return;
        } finally {
          for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
        }
        for (const outcome of ranks) {
          if (outcome.result !== undefined)
            process.stdout.write(`[${outcome.rank}] result: ${JSON.stringify(outcome.result)}\n`);
        }
        setExitCode(0);
      },
    );
}
