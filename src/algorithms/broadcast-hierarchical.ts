import { binomialTree } from './binomial-tree.js';
import {
  type CallShape,
  type Schedule,
  StepList,
  hostLayout,
  messagePieces,
  singleChannel,
  slice,
} from './schedule.js';

/**
 * Hierarchical broadcast, pipelined by chunks: the root leads its host; chunks travel a binomial
 * tree of host leaders (one stream into each host) and each leader forwards them to its ranks.
 */
export function broadcastHierarchical(shape: CallShape, rank: number): Schedule {
  const { hostOf, members, leaders } = hostLayout(shape, shape.root);
  const host = hostOf[rank];
  const leader = leaders[host];
  const isRoot = rank === shape.root;
  const tree = binomialTree(leaders.length, hostOf[shape.root], host);
  const others = members[host].filter((m) => m !== rank);
  const list = new StepList();
  for (const piece of messagePieces(shape)) {
    const out = slice('output', piece.offset, piece.count);
    if (rank !== leader) {
      list.recv(leader, out);
      continue;
    }
    const source = isRoot ? slice('input', piece.offset, piece.count) : out;
    if (isRoot) list.copy(source, out);
    else list.recv(leaders[tree.parent!], out);
    for (const child of tree.children) list.send(leaders[child], source);
    for (const m of others) list.send(m, source);
  }
  return singleChannel(shape, rank, 'hierarchical', list);
}
