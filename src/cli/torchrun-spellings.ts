/** torchrun's underscore spellings of the launcher's options, which tsccl launch accepts as they are. */
const TORCHRUN_SPELLINGS: Readonly<Record<string, string>> = {
  '--nproc_per_node': '--nproc-per-node',
  '--node_rank': '--node-rank',
  '--master_addr': '--master-addr',
  '--master_port': '--master-port',
  '--threads_per_proc': '--threads-per-proc',
  '--timeout_ms': '--timeout-ms',
};

/**
 * `tsccl launch` arguments with torchrun's spellings rewritten, up to the script: what follows
 * the script is the script's own. Every launcher option takes a value, so a word that is not an
 * option's value is the script.
 */
export function withTorchrunSpellings(argv: readonly string[]): string[] {
  const at = argv.findIndex((word) => !word.startsWith('-'));
  if (argv[at] !== 'launch') return [...argv];
  const out = argv.slice(0, at + 1);
  let i = at + 1;
  for (; i < argv.length; i++) {
    const word = argv[i];
    if (word === '--' || !word.startsWith('-')) break;
    const [name, value] = word.split(/=(.*)/s, 2);
    const spelled = TORCHRUN_SPELLINGS[name] ?? name;
    out.push(value === undefined ? spelled : `${spelled}=${value}`);
    if (value === undefined && word.startsWith('--') && i + 1 < argv.length) out.push(argv[++i]);
  }
  return [...out, ...argv.slice(i)];
}
