/**
 * AWS's tuner for NCCL on EFA (aws-ofi-nccl's region tuner, src/tuner/nccl_ofi_regions.cpp):
 * on p5 and later it decides an all-reduce's algorithm and protocol, not NCCL's cost model. Each
 * choice owns a region of the plane (message bytes, ranks), a polygon drawn in log2-log2
 * coordinates; a call takes the first region that holds its point, on an edge included. On two
 * nodes or fewer it leaves the choice to NCCL, and a point in no region does too.
 *
 * The vertices below are AWS's for all-reduce with 8 ranks a node on P5 and P5e (8 H100 or H200
 * a node, four 100 Gb/s EFA a GPU) and on P5en (8 H200, two 200 Gb/s EFA a GPU), as at
 * aws-ofi-nccl commit 2daf7d30 (2026); docs/SIMULATOR.md ("AWS's tuner on p5") shows nccl-tests
 * on p5 stepping where they do.
 */

/** AWS's platforms whose calls the region tuner decides (is_region_supported), of those modelled here. */
export type AwsPlatform = 'p5' | 'p5en';

/** A point of the plane: message bytes, ranks. */
type Point = readonly [bytes: number, ranks: number];

interface Region {
  readonly algorithm: string;
  readonly protocol: string;
  readonly vertices: readonly Point[];
}

/** The largest message and rank count AWS's table reaches (TUNER_MAX_SIZE, TUNER_MAX_RANKS). */
const MAX_POINT: Point = [100 * 2 ** 30, 2 ** 20];

/** A coordinate in log2 scale; 0 (a region's left edge) as a tiny positive number, as AWS's table takes it. */
function log2(v: number): number {
  return Math.log2(v === 0 ? 1e-6 : v);
}

function toLog(p: Point): [number, number] {
  return [log2(p[0]), log2(p[1])];
}

/**
 * The point where the line through a and b (log2-log2) leaves the box up to `far`: at far's
 * ranks, or at far's bytes if it gets there first. The table closes its regions this way.
 */
function extendTo(a: Point, b: Point, far: Point): Point {
  const [ax, ay] = toLog(a);
  const [bx, by] = toLog(b);
  const [fx, fy] = toLog(far);
  if (ax === bx) return [2 ** ax, 2 ** fy];
  if (ay === by) return [2 ** fx, 2 ** ay];
  const slope = (ay - by) / (ax - bx);
  const offset = by - slope * bx;
  const yAtFarX = slope * fx + offset;
  return yAtFarX < fy ? [2 ** fx, 2 ** yAtFarX] : [2 ** ((fy - offset) / slope), 2 ** fy];
}

const TREE_LL128_EDGE = extendTo([402653184, 2048], [402653184, 4096], MAX_POINT);
const NVLS_TREE_EDGE = extendTo([8053063680, 160], [9663676416, 192], MAX_POINT);
const RING_SIMPLE_EDGE = NVLS_TREE_EDGE;

/** P5 and P5e, all-reduce, 8 ranks a node, in AWS's order. */
export const P5_ALL_REDUCE_REGIONS: readonly Region[] = [
  {
    algorithm: 'tree',
    protocol: 'LL128',
    vertices: [
      [0, 16],
      [31457280, 16],
      [37748736, 32],
      [117440512, 64],
      [301989888, 128],
      [301989888, 256],
      [335544320, 512],
      [536870912, 1024],
      [402653184, 2048],
      [402653184, 4096],
      TREE_LL128_EDGE,
      [0, TREE_LL128_EDGE[1]],
    ],
  },
  {
    algorithm: 'nvls_tree',
    protocol: 'Simple',
    vertices: [
      [31457281, 16],
      [MAX_POINT[0], 16],
      [31457281, 16],
    ],
  },
  {
    algorithm: 'ring',
    protocol: 'LL128',
    vertices: [
      [31457280, 17],
      [1073741824, 17],
      [2147483648, 64],
      [2147483648, 128],
      [1342177280, 160],
      [2147483648, 256],
      [1074790400, 256],
      [444596224, 160],
      [301989888, 128],
      [117440512, 64],
      [37748736, 32],
    ],
  },
  {
    algorithm: 'nvls_tree',
    protocol: 'Simple',
    vertices: [
      [2147483648, 128],
      [6442450944, 128],
      [8053063680, 160],
      [9663676416, 192],
      NVLS_TREE_EDGE,
      TREE_LL128_EDGE,
      [402653184, 4096],
      [402653184, 2048],
      [536870912, 1024],
      [335544320, 512],
      [301989888, 256],
      [310378496, 160],
      [444596224, 160],
      [1074790400, 256],
      [2684354560, 256],
      [2147483648, 224],
      [1342177280, 160],
    ],
  },
  {
    algorithm: 'ring',
    protocol: 'Simple',
    vertices: [
      [1073741824, 17],
      [RING_SIMPLE_EDGE[0], 17],
      RING_SIMPLE_EDGE,
      [9663676416, 192],
      [8053063680, 160],
      [2684354560, 64],
      [1610612736, 32],
    ],
  },
];

const P5EN_TREE_LL_EDGE = extendTo([196608, 192], [196608, 1024], MAX_POINT);
const P5EN_TREE_LL128_EDGE = extendTo([129499136, 127], [218103808, 1024], MAX_POINT);
const P5EN_NVLS_TREE_EDGE = extendTo([7516192768, 256], [17179869184, 448], MAX_POINT);

/** P5en, all-reduce, 8 ranks a node, in AWS's order. */
export const P5EN_ALL_REDUCE_REGIONS: readonly Region[] = [
  {
    algorithm: 'tree',
    protocol: 'LL',
    vertices: [[0, 16], [196608, 16], [196608, 1024], P5EN_TREE_LL_EDGE, [0, MAX_POINT[1]]],
  },
  {
    algorithm: 'tree',
    protocol: 'LL128',
    vertices: [
      P5EN_TREE_LL_EDGE,
      [196608, 1024],
      [196608, 16],
      [13107200, 16],
      [129499136, 127],
      [218103808, 1024],
      P5EN_TREE_LL128_EDGE,
    ],
  },
  {
    algorithm: 'ring',
    protocol: 'LL128',
    vertices: [
      [129499136, 127],
      [13107200, 16],
      [29884416, 16],
      [293601280, 32],
      [589299712, 64],
      [549453824, 128],
    ],
  },
  {
    algorithm: 'nvls_tree',
    protocol: 'Simple',
    vertices: [
      P5EN_TREE_LL128_EDGE,
      [218103808, 1024],
      [129499136, 127],
      [549453824, 128],
      [589299712, 64],
      [293601280, 32],
      [29884416, 16],
      [MAX_POINT[0], 16],
      [509607936, 32],
      [7516192768, 256],
      [17179869184, 448],
      P5EN_NVLS_TREE_EDGE,
    ],
  },
  {
    algorithm: 'ring',
    protocol: 'Simple',
    vertices: [P5EN_NVLS_TREE_EDGE, [17179869184, 448], [7516192768, 256], [509607936, 32], [MAX_POINT[0], 16]],
  },
];

const ALL_REDUCE_REGIONS: Readonly<Record<AwsPlatform, readonly Region[]>> = {
  p5: P5_ALL_REDUCE_REGIONS,
  p5en: P5EN_ALL_REDUCE_REGIONS,
};

/** How near (log2 units) a point must lie to an edge to count as on it. */
const ON_EDGE = 1e-9;

/** Whether p lies on the segment a-b (all log2). */
function onSegment(p: [number, number], a: [number, number], b: [number, number]): boolean {
  const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
  const cross = (p[0] - a[0]) * dy - (p[1] - a[1]) * dx;
  const length = Math.hypot(dx, dy);
  if (length === 0) return Math.hypot(p[0] - a[0], p[1] - a[1]) <= ON_EDGE;
  if (Math.abs(cross) / length > ON_EDGE) return false;
  const along = ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (length * length);
  return along >= -ON_EDGE && along <= 1 + ON_EDGE;
}

/** Whether the region holds the point, on an edge included (even-odd rule, log2-log2). */
export function regionHolds(region: Region, point: Point): boolean {
  const p = toLog(point);
  const v = region.vertices.map(toLog);
  let inside = false;
  for (let i = 0, j = v.length - 1; i < v.length; j = i++) {
    if (onSegment(p, v[j], v[i])) return true;
    const [xi, yi] = v[i];
    const [xj, yj] = v[j];
    if (yi > p[1] !== yj > p[1] && p[0] < ((xj - xi) * (p[1] - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/**
 * What AWS's tuner runs for an all-reduce of `bytes` on `ranks` over `nodes` nodes of `platform`,
 * among the algorithms and protocols the topology offers (a region whose choice is not offered
 * is passed over, as the tuner passes over what NCCL cannot run); undefined where NCCL's own
 * tuner chooses: two nodes or fewer, not 8 ranks a node, or a point in no region.
 */
export function awsAllReduceChoice(
  platform: AwsPlatform,
  call: { bytes: number; ranks: number; nodes: number },
  offered: { algorithms: readonly string[]; protocols: readonly string[] },
): { algorithm: string; protocol: string } | undefined {
  if (call.nodes <= 2 || call.ranks !== 8 * call.nodes) return undefined;
  const point: Point = [call.bytes, call.ranks];
  for (const region of ALL_REDUCE_REGIONS[platform]) {
    if (!offered.algorithms.includes(region.algorithm) || !offered.protocols.includes(region.protocol)) continue;
    if (regionHolds(region, point)) return { algorithm: region.algorithm, protocol: region.protocol };
  }
  return undefined;
}
