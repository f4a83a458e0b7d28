import { invalidArgument } from '../errors.js';
import { nearestName } from './closest-name.js';

/**
 * What a variable accepts: returns what was expected when `text` (never empty: unset and empty
 * mean the default) is not acceptable, else undefined.
 */
type ParamCheck = (text: string) => string | undefined;

const oneOf =
  (...choices: string[]): ParamCheck =>
  (text) =>
    choices.includes(text.toUpperCase()) || choices.includes(text.toLowerCase())
      ? undefined
      : `one of ${choices.join(', ')}`;
const FLAG = oneOf('0', '1');
const intAtLeast =
  (min: number): ParamCheck =>
  (text) =>
    /^\d+$/.test(text) && Number(text) >= min
      ? undefined
      : min === 0
        ? 'a non-negative integer'
        : `an integer of at least ${min}`;
const ANY: ParamCheck = () => undefined;
/** host:port, or [v6]:port, with a port a store can listen on. */
const HOST_PORT: ParamCheck = (text) => {
  const m = /^(\[[^\]]+\]|[^:\s]+):(\d+)$/.exec(text);
  return m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535
    ? undefined
    : 'host:port with a port from 1 to 65535, e.g. 10.0.0.1:29500 or [fe80::1]:29500';
};
/** NCCL_ALGO's syntax: `collective:algorithm` pairs separated by ';' (the tuner checks the names). */
const ALGO_LIST: ParamCheck = (text) =>
  /^\s*[A-Za-z_]+\s*:\s*[A-Za-z_,]+\s*(;\s*[A-Za-z_]+\s*:\s*[A-Za-z_,]+\s*)*;?\s*$/.test(text)
    ? undefined
    : 'collective:algorithm pairs separated by ";", e.g. "allreduce:ring;broadcast:binomial_tree"';

/** Every TSCCL_* tunable, with its default and meaning; `tsccl params` prints this table. */
export interface Param {
  readonly name: string;
  readonly defaultValue: string;
  readonly doc: string;
  readonly check: ParamCheck;
}

export const PARAMS: readonly Param[] = [
  {
    name: 'TSCCL_TIMEOUT_MS',
    defaultValue: '300000',
    doc: "Default timeout of every blocking call, in ms (a call's timeoutMs overrides it)",
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_WARMUP_MS',
    defaultValue: '1000',
    doc: "Longest time init's warm-up may take, in ms, where every busy rank thread on the machine has a core; as many times longer as they outnumber the cores (8 thread ranks on 2 cores: 4x); 0 turns it off. Init runs the paths of small and mid-size collectives on a private communicator until V8 has compiled them (8192 small calls), so that a job's first calls run at their warm speed",
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_WARMUP_EAGER_COMPILE',
    defaultValue: 'auto',
    doc: "1: during init's warm-up V8's interrupt budget is a quarter of its default (restored after), so V8 optimises the warmed paths, mid-size calls' too, in fewer calls; left alone where the process's Node flags set --interrupt-budget or the V8 version's default is not known; auto: for thread ranks (over TCP it did not help); 0: off",
    check: oneOf('auto', '0', '1'),
  },
  {
    name: 'TSCCL_RANK_YOUNG_GEN_MB',
    defaultValue: '4',
    doc: "Young generation of each thread rank and progress engine tsccl starts, in MiB (a Worker's resourceLimits.maxYoungGenerationSizeMb), and of each process rank the launcher starts (--max-semi-space-size, a third of it, unless the rank's own flags set one); 0 keeps V8's, which grows to 16-32 MiB and faults its pages in afresh as it cycles, stalling a stream of small calls for their first tens of thousands",
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_RANK_SYNC_COMPILE',
    defaultValue: 'auto',
    doc: "1: the thread and process ranks tsccl's launchers start compile V8's optimised code on their own thread (V8's --no-concurrent-recompilation) instead of a background thread; auto: where they are at least as many as the machine's cores, so a background compile would take a core from a rank while its peers wait; 0: never. Flags of the ranks' own that choose either way stand",
    check: oneOf('auto', '0', '1'),
  },
  {
    name: 'TSCCL_ENGINE_HANDOFF_US',
    defaultValue: '0',
    doc: "What handing a call to the progress engine and its completion back costs, in us, as init({ progress: 'auto' }) prices it: calls whose predicted inline time is below it run on the rank's own thread. 0: measured when the world is created (small all-reduces on the engine against the same inline), the largest rank's figure agreed by all",
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_ALGO',
    defaultValue: '',
    doc: 'Algorithm overrides, NCCL-style: "allreduce:ring;broadcast:binomial_tree"',
    check: ALGO_LIST,
  },
  {
    name: 'TSCCL_PROTO',
    defaultValue: 'auto',
    doc: 'Protocol, as NCCL_PROTO: auto (the tuner decides when a small collective runs one-shot over the low-latency path), ll (one-shot whenever the message fits: thread ranks 64 KiB, TCP 4 KiB), simple (always the schedule)',
    check: oneOf('auto', 'll', 'simple'),
  },
  {
    name: 'TSCCL_CHUNK_BYTES',
    defaultValue: '4194304',
    doc: 'Pipelining piece size in bytes for large messages; unset: 4 MiB; 16 MiB when thread ranks outnumber the cores; 2 MiB for all-reduces between 2 process ranks over TCP (tiny values force the chunked paths in tests)',
    check: intAtLeast(1),
  },
  {
    name: 'TSCCL_SPIN_US',
    defaultValue: '2000',
    doc: 'How long a thread rank spins for a peer before it sleeps, in us (ranks that outnumber the cores yield their core on every turn, see TSCCL_SPIN_YIELD; without it they spin 2 us): longer than a sleeping peer takes to wake, so a hand-off that woke one does not fall asleep itself. A process rank polls its sockets as long for a receive of up to 64 KiB (yielding its core on every turn of the event loop when the ranks on its machine outnumber the cores)',
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_SPIN_YIELD',
    defaultValue: '1',
    doc: "1: ranks that outnumber the cores spin (thread ranks) or poll their sockets (process ranks) as long as TSCCL_SPIN_US and give their core to any other runnable thread on every turn (sched_yield, through node:wasi), as Open MPI's oversubscribed ranks do, instead of sleeping after 2 us; 0: they sleep after 2 us",
    check: FLAG,
  },
  {
    name: 'TSCCL_SOCKET_CALLS',
    defaultValue: 'ffi',
    doc: "How process ranks read and write their sockets' descriptors at once (in-place reads while a small receive waits, small frames written without a turn of the event loop): ffi, recv(2) and send(2) through koffi (Linux with glibc; elsewhere node); node, node:fs's readSync and writeSync",
    check: oneOf('ffi', 'node'),
  },
  {
    name: 'TSCCL_KERNEL',
    defaultValue: 'auto',
    doc: 'Reduction kernels: auto (WASM SIMD on the shared arena where it can, JS loops elsewhere) or js',
    check: oneOf('auto', 'js'),
  },
  {
    name: 'TSCCL_DEBUG',
    defaultValue: 'WARN',
    doc: "Log level: NONE, WARN, INFO (INFO logs each call's chosen algorithm)",
    check: oneOf('NONE', 'WARN', 'INFO'),
  },
  {
    name: 'TSCCL_JOB_TOKEN',
    defaultValue: '',
    doc: 'Shared secret of a job: every store and rank connection proves it (HMAC); tsccl launch makes one for a single node',
    check: ANY,
  },
  {
    name: 'TSCCL_ALLOW_INSECURE',
    defaultValue: '0',
    doc: 'Set to 1 to let a job without a token accept connections from non-loopback addresses',
    check: FLAG,
  },
  {
    name: 'TSCCL_STORE',
    defaultValue: '',
    doc: 'host:port of the rendezvous store (default MASTER_ADDR:MASTER_PORT)',
    check: HOST_PORT,
  },
  {
    name: 'TSCCL_STORE_HOSTED',
    defaultValue: '0',
    doc: 'Set by launchers that serve the store themselves; otherwise rank 0 serves it',
    check: FLAG,
  },
  {
    name: 'TSCCL_SOCKET_IFNAME',
    defaultValue: '',
    doc: 'Interfaces for rank traffic, NCCL syntax: prefixes, ^ to exclude, = for exact names',
    check: ANY,
  },
  {
    name: 'TSCCL_SOCKET_FAMILY',
    defaultValue: 'AF_INET',
    doc: 'AF_INET or AF_INET6: address family of rank traffic',
    check: oneOf('AF_INET', 'AF_INET6'),
  },
  {
    name: 'TSCCL_NSOCKS_PERPEER',
    defaultValue: '1',
    doc: 'TCP sockets per pair of ranks; messages of 512 KiB or more are striped across them',
    check: intAtLeast(1),
  },
  {
    name: 'TSCCL_HEARTBEAT_TIMEOUT_MS',
    defaultValue: '60000',
    doc: 'A TCP peer silent this long counts as lost (links carry a heartbeat every second)',
    check: intAtLeast(1),
  },
  {
    name: 'TSCCL_CHECKSUM',
    defaultValue: '',
    doc: "CRC32 of every message end to end: unset = on for TCP to other machines, off within a machine; 1 = on for all; 0 = off for all (a call's { checksum } overrides)",
    check: FLAG,
  },
  {
    name: 'TSCCL_RESEND_RETRIES',
    defaultValue: '3',
    doc: 'TCP: how often a frame that failed its CRC32 is asked for again before the call fails with TSCCL_ERR_CHECKSUM; 0 = never (fail at once)',
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_RESEND_WINDOW_BYTES',
    defaultValue: '4194304',
    doc: "TCP: bytes of small checksummed frames kept per peer until acknowledged, for resend (larger frames are kept as references to the caller's memory, and sent again only if it did not change)",
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_RECONNECT_MS',
    defaultValue: '10000',
    doc: 'TCP: how long a connection that broke while both ranks live may take to be re-established, the transfer going on where it stopped (needs checksummed frames: on between machines); 0 = never (the peer is lost at once)',
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_OP_RETRIES',
    defaultValue: '1',
    doc: 'TCP: how often a collective whose transfer could not go on while every rank lives (a link lost, a frame past its resends) is run again from its input over new connections, once every rank agrees; 0 = never (the call fails; shrink takes over)',
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_OP_RETRY_SAVE_INPUT',
    defaultValue: '0',
    doc: '1: in-place reductions and all-to-alls over TCP keep a copy of their input, so that TSCCL_OP_RETRIES can run them again (a copy of the input per call)',
    check: FLAG,
  },
  {
    name: 'TSCCL_COMPRESSION',
    defaultValue: '',
    doc: 'Wire format of every float32/float16/bfloat16 sum or average collective of the job (allReduce, reduceScatter, reduce, allGather, broadcast) that does not set { compression }: fp16, bf16, fp8e4m3, fp8e5m2, int8, int4 or none',
    check: oneOf('none', 'fp16', 'bf16', 'fp8e4m3', 'fp8e5m2', 'int8', 'int4'),
  },
  {
    name: 'TSCCL_COMPRESSION_BLOCK',
    defaultValue: '256',
    doc: 'Elements per scale of the blockwise formats (int8, int4, fp8), even, from 2 to 1048576',
    check: (text) =>
      /^\d+$/.test(text) && Number(text) >= 2 && Number(text) <= 1 << 20 && Number(text) % 2 === 0
        ? undefined
        : 'an even integer from 2 to 1048576',
  },
  {
    name: 'TSCCL_COMPRESSION_PIECE',
    defaultValue: '524288',
    doc: 'Elements per piece of a compressed call: pieces are encoded, sent, reduced and decoded as a pipeline, so the codecs run while the wire is busy',
    check: intAtLeast(1),
  },
  {
    name: 'TSCCL_COMPRESSION_SHADOW',
    defaultValue: '0',
    doc: '1: every compressed call also computes the exact result and reports the error compression made (comm.compressionReports(), TSCCL_DEBUG=INFO)',
    check: FLAG,
  },
  {
    name: 'TSCCL_TRACE_DIR',
    defaultValue: '',
    doc: 'Where flight records are dumped on timeout, abort or SIGUSR1 (default: <tmpdir>/tsccl-trace/<job id>, a directory per job)',
    check: ANY,
  },
  {
    name: 'TSCCL_JOB_ID',
    defaultValue: '',
    doc: 'Names the job in its flight records and default trace directory; tsccl run and launch set one (launch on several nodes: the store address, the same on every node); otherwise TORCHELASTIC_RUN_ID, SLURM_JOB_ID or MASTER_ADDR-MASTER_PORT',
    check: (text) =>
      /^[A-Za-z0-9._-]+$/.test(text) ? undefined : 'letters, digits, ".", "_" and "-" only (it names a directory)',
  },
  {
    name: 'TSCCL_FLIGHT_RECORDER_ENTRIES',
    defaultValue: '256',
    doc: 'Operations each communicator remembers for its flight record',
    check: intAtLeast(0),
  },
  {
    name: 'TSCCL_DEBUG_CHECK',
    defaultValue: '0',
    doc: '1: before each collective, ranks compare what they were called with and fail together on a mismatch',
    check: FLAG,
  },
  {
    name: 'TSCCL_PROFILE',
    defaultValue: '',
    doc: 'Path of the machine profile `tsccl tune` writes and `--topo local` reads (default: ~/.cache/tsccl/profile.json)',
    check: ANY,
  },
  {
    name: 'TSCCL_RANK_GRACE_MS',
    defaultValue: '10000',
    doc: 'How long the launcher lets surviving ranks end after one fails, before it stops them',
    check: intAtLeast(0),
  },
];

/** Variables that are not tunables but not misspellings either: a launcher's to its ranks, and the test suite's knobs. */
const LAUNCHER_VARIABLES = new Set(['TSCCL_THREADS_PER_PROC', 'TSCCL_TEST_FAULT', 'TSCCL_CALIBRATION_REPORT']);

/** One bad variable: its name, its value and what it must be. */
export interface ParamProblem {
  readonly name: string;
  readonly value: string;
  readonly expected: string;
}

/** Every TSCCL_* variable set to a value its check refuses. */
export function paramProblems(env: NodeJS.ProcessEnv = process.env): ParamProblem[] {
  const problems: ParamProblem[] = [];
  for (const param of PARAMS) {
    const value = env[param.name];
    if (value === undefined || value === '') continue;
    const expected = param.check(value);
    if (expected !== undefined) problems.push({ name: param.name, value, expected });
  }
  return problems;
}

/**
 * Checks every TSCCL_* variable at once, so that a bad value is refused where a job starts (the
 * launcher, and init in each rank), all with the same error, instead of when a call first reads it.
 */
export function checkParams(env: NodeJS.ProcessEnv = process.env): void {
  const problems = paramProblems(env);
  if (problems.length === 0) return;
  throw invalidArgument(problems.map((p) => `${p.name}=${p.value} is not valid: expected ${p.expected}`).join('; '), {
    argument: problems[0].name,
  });
}

/** TSCCL_* variables no parameter has (misspellings, most likely), each with the closest declared name. */
export function unknownParams(env: NodeJS.ProcessEnv = process.env): { name: string; closest: string }[] {
  return Object.keys(env)
    .filter(
      (name) => name.startsWith('TSCCL_') && !LAUNCHER_VARIABLES.has(name) && !PARAMS.some((p) => p.name === name),
    )
    .map((name) => ({
      name,
      closest: closestName(
        name,
        PARAMS.map((p) => p.name),
      ),
    }));
}

/** The declared name nearest `name`, however far: a TSCCL_ variable is reported with it either way. */
export function closestName(name: string, candidates: readonly string[]): string {
  return nearestName(name, candidates).name;
}

export function paramString(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const param = PARAMS.find((p) => p.name === name);
  if (param === undefined) throw new Error(`undeclared parameter ${name}`);
  const value = env[name];
  return value === undefined || value === '' ? param.defaultValue : value;
}

/** A switch: '1' on, '0' off; anything else is an error that names the variable. */
export function paramFlag(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const text = paramString(name, env);
  if (text !== '0' && text !== '1') throw invalidArgument(`${name}=${text} must be 0 or 1`, { argument: name });
  return text === '1';
}

/** A switch that may be left to tsccl: '1' on, '0' off, 'auto' as `whenAuto` says. */
export function paramAutoFlag(name: string, whenAuto: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  const mode = paramString(name, env);
  return mode === '1' || (mode === 'auto' && whenAuto);
}

/** A whole number of at least `min`; anything else is an error that names the variable. */
export function paramInt(name: string, env: NodeJS.ProcessEnv = process.env, min = 0): number {
  const text = paramString(name, env);
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw invalidArgument(
      `${name}=${text} must be ${min === 0 ? 'a non-negative integer' : `an integer of at least ${min}`}`,
      { argument: name },
    );
  }
  return value;
}
