// One job of process ranks on network-namespace "hosts" (test/harness/netns.ts's star), one
// `tsccl launch` per host with `perHost` ranks each; resolves with every rank's result (the
// JSON its script returned) in rank order.
import { tscclInNamespace } from '../../dist/test/harness/netns.js';

export async function netnsJob(star, { script, args, port, token, perHost = 1 }) {
  const hosts = star.names.length;
  const outs = await Promise.all(
    star.names.map((ns, i) =>
      tscclInNamespace(
        ns,
        [
          'launch',
          ...['--nnodes', String(hosts), '--node-rank', String(i), '--nproc-per-node', String(perHost)],
          ...['--master-addr', star.addresses[0], '--master-port', String(port)],
          script,
          ...args,
        ],
        { ...process.env, TSCCL_JOB_TOKEN: token },
      ),
    ),
  );
  const results = [
    ...outs
      .map((o) => o.out)
      .join('')
      .matchAll(/^\[(\d+)\] result: (.*)$/gm),
  ];
  return results.sort((a, b) => Number(a[1]) - Number(b[1])).map((m) => JSON.parse(m[2]));
}
