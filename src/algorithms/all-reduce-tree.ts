import { inOrderDepth, inOrderTree } from './in-order-binary-tree.js';
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
 * A rank's place in NCCL's tree: the ranks of a host form a chain from its leader (its first
 * rank), and the leaders form NCCL's binary tree over the hosts (in-order-binary-tree.ts), host
 * 0's leader at the root. Without host information every rank is its own host: a binary tree of
 * the ranks. Depth counts hops from the root.
 */
function treePosition(
  shape: CallShape,
  rank: number,
): { parent: number | undefined; children: number[]; depth: number } {
  const { hostOf, members, leaders } = hostLayout(shape);
  const host = hostOf[rank];
  const chain = members[host];
  const place = chain.indexOf(rank);
  const children: number[] = [];
  if (place + 1 < chain.length) children.push(chain[place + 1]);
  let parent: number | undefined;
  if (place > 0) {
    parent = chain[place - 1];
  } else {
    const node = inOrderTree(leaders.length, host);
    if (node.parent !== undefined) parent = leaders[node.parent];
    for (const child of node.children) children.push(leaders[child]);
  }
  return { parent, children, depth: inOrderDepth(leaders.length, host) + place };
}

/**
 * Pieces a rank lets the stream coming down lag behind the one going up, per level of depth. A
 * piece coming down was sent by the parent that many steps earlier, so its delivery (a hop's
 * latency, several times a piece's transfer on fast links) is over when the rank asks for it;
 * NCCL keeps 8 steps in flight per connection for the same reason.
 */
const LAG_PER_LEVEL = 4;

/**
 * Tree all-reduce, pipelined by chunks, as NCCL runs it across servers: each piece is reduced
 * up the tree to the root and sent back down. A rank at depth d sends piece i up, then takes
 * piece i-4d coming down: the root turns each piece around at once, and every level below waits
 * for a piece its parent passed on steps ago, so no round trip stalls the stream. Inner
 * ranks accumulate in scratch (the input must stay untouched until its piece has gone up).
 * Across h hosts a piece crosses log2(h) network hops each way, where a ring crosses h.
 */
export function allReduceTree(shape: CallShape, rank: number): Schedule {
  const { parent, children, depth } = treePosition(shape, rank);
  const isRoot = parent === undefined;
  const accumulator = isRoot ? 'output' : 'scratch';
  const pieces = messagePieces(shape);
  const list = new StepList();
  const up = (offset: number, count: number) => {
    const input = slice('input', offset, count);
    const acc = slice(accumulator, offset, count);
    if (children.length === 0) {
      if (isRoot) list.copy(input, acc);
      else list.send(parent!, input);
      return;
    }
    children.forEach((child, k) => {
      list.recvReduce(child, acc, k === 0 ? input : acc);
    });
    if (!isRoot) list.send(parent!, acc);
  };
  const down = (offset: number, count: number) => {
    const out = slice('output', offset, count);
    if (!isRoot) list.recv(parent!, out);
    for (const child of children) list.send(child, out);
  };
  const lag = LAG_PER_LEVEL * depth;
  for (let i = 0; i < pieces.length + lag; i++) {
    if (i < pieces.length) up(pieces[i].offset, pieces[i].count);
    if (i >= lag) down(pieces[i - lag].offset, pieces[i - lag].count);
  }
  return singleChannel(shape, rank, 'tree', list, !isRoot && children.length > 0 ? shape.count : 0);
}
