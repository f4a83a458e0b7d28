/**
 * Channels that are images of each other. NCCL-style channels on identical servers are often
 * the same ring turned by one GPU: channel c+1 is channel c with every rank moved by one
 * permutation of the ranks, and every route moved by a matching permutation of the links that
 * keeps capacities and latencies. Then all channels of a class move in step, each the image of
 * the first, and a walk of the first alone is exact if each link stands for its orbit: a link's
 * load is the first channel's load summed over the links it is the image of. The walk costs one
 * channel per class instead of all of them.
 */
export interface ChannelFold {
  /** Each link's capacity in the folded network: its orbit's representative gets the capacity times the orbit's size over the channels of a class; other links 0. */
  readonly capacities: Float64Array;
  /** The path with each link replaced by its orbit's representative. */
  fold(path: Int32Array): Int32Array;
  /** What every real link carried, from what the folded links carried. */
  unfold(carried: Float64Array): Float64Array;
  /** A mask over real links as one over folded links: a representative is set where its whole orbit is. */
  foldMask(mask: Uint8Array): Uint8Array;
}

export interface FoldInput {
  /** Each channel's order of ranks. */
  readonly rings: readonly (readonly number[])[];
  /** Channels in classes, each in the order the permutation walks it (class[i+1] is the image of class[i], the first the image of the last); classes of one size. */
  readonly classes: readonly (readonly number[])[];
  /** The ordered rank pairs the walked channels send between. */
  readonly pairs: readonly (readonly [number, number])[];
  /** The links a message from rank `from` to rank `to` crosses. */
  route(from: number, to: number): Int32Array;
  /** Whether two routes cost a message the same fixed delay (latency, network step). */
  sameDelay(a: Int32Array, b: Int32Array): boolean;
  /** Whether two ranks do their own work (reductions, copies) at the same speed. */
  sameRank(a: number, b: number): boolean;
  /** Link capacities of the call. */
  readonly capacities: Float64Array;
}

/**
 * The fold of the channels, or undefined when they are not images of each other under one
 * permutation that keeps every route's capacities and delays (then every channel is walked).
 */
export function foldChannels(input: FoldInput): ChannelFold | undefined {
  const { rings, classes, capacities } = input;
  const perClass = classes[0]?.length ?? 0;
  if (perClass < 2 || classes.some((c) => c.length !== perClass)) return undefined;
  const permutation = rankPermutation(rings, classes);
  if (permutation === undefined) return undefined;
  for (let r = 0; r < permutation.length; r++) if (!input.sameRank(r, permutation[r])) return undefined;
  const image = linkImage(input, permutation, perClass);
  if (image === undefined) return undefined;
  const representative = new Int32Array(capacities.length).fill(-1);
  const orbitSize = new Int32Array(capacities.length);
  for (const start of image.keys()) {
    if (representative[start] >= 0) continue;
    const orbit = [start];
    for (let link = image.get(start); link !== start; link = image.get(link)) {
      if (link === undefined || orbit.length > perClass) return undefined;
      orbit.push(link);
    }
    const least = Math.min(...orbit);
    for (const link of orbit) {
      representative[link] = least;
      orbitSize[link] = orbit.length;
    }
  }
  // The walk keeps one place per link of a path: a route through two links of one orbit would
  // meet its representative twice, so such channels are walked in full.
  for (const [a, b] of input.pairs) {
    const route = input.route(a, b);
    if (new Set(Array.from(route, (link) => representative[link])).size !== route.length) return undefined;
  }
  const folded = new Float64Array(capacities.length);
  for (let link = 0; link < capacities.length; link++)
    if (representative[link] === link) folded[link] = (capacities[link] * orbitSize[link]) / perClass;
  return {
    capacities: folded,
    fold: (path) => path.map((link) => representative[link]),
    foldMask(mask) {
      const folded = new Uint8Array(mask.length);
      for (let link = 0; link < mask.length; link++) if (representative[link] === link) folded[link] = 1;
      for (let link = 0; link < mask.length; link++)
        if (representative[link] >= 0 && mask[link] === 0) folded[representative[link]] = 0;
      return folded;
    },
    unfold(carried) {
      const real = new Float64Array(carried.length);
      for (let link = 0; link < carried.length; link++)
        if (representative[link] >= 0) real[link] = (carried[representative[link]] * perClass) / orbitSize[link];
      return real;
    },
  };
}

/**
 * The one permutation of ranks that takes each channel of a class to the next, if there is
 * one: read off the first two channels, checked on every step of every class.
 */
function rankPermutation(
  rings: readonly (readonly number[])[],
  classes: readonly (readonly number[])[],
): Int32Array | undefined {
  const from = rings[classes[0][0]];
  const to = rings[classes[0][1]];
  const permutation = new Int32Array(from.length).fill(-1);
  for (let j = 0; j < from.length; j++) permutation[from[j]] = to[j];
  if (permutation.some((r) => r < 0)) return undefined;
  for (const channels of classes)
    for (let i = 0; i < channels.length; i++) {
      const ring = rings[channels[i]];
      const next = rings[channels[(i + 1) % channels.length]];
      for (let j = 0; j < ring.length; j++) if (permutation[ring[j]] !== next[j]) return undefined;
    }
  return permutation;
}

/**
 * The permutation of links that takes each route the channels use to the route of its ranks'
 * images, checked to be one-to-one and to keep every link's capacity and every route's delay.
 */
function linkImage(input: FoldInput, permutation: Int32Array, steps: number): Map<number, number> | undefined {
  const image = new Map<number, number>();
  const preimage = new Map<number, number>();
  for (const [a, b] of input.pairs) {
    let from = a;
    let to = b;
    let route = input.route(from, to);
    for (let step = 0; step < steps; step++) {
      const nextFrom = permutation[from];
      const nextTo = permutation[to];
      const next = input.route(nextFrom, nextTo);
      if (next.length !== route.length || !input.sameDelay(route, next)) return undefined;
      for (let i = 0; i < route.length; i++) {
        const link = route[i];
        const known = image.get(link);
        if (known === undefined) {
          if (preimage.has(next[i]) || input.capacities[link] !== input.capacities[next[i]]) return undefined;
          image.set(link, next[i]);
          preimage.set(next[i], link);
        } else if (known !== next[i]) return undefined;
      }
      from = nextFrom;
      to = nextTo;
      route = next;
    }
  }
  return image;
}
