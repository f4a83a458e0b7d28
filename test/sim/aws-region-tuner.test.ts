import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  P5EN_ALL_REDUCE_REGIONS,
  P5_ALL_REDUCE_REGIONS,
  awsAllReduceChoice,
  regionHolds,
} from '../../src/sim/aws-region-tuner.js';

const EVERYTHING = { algorithms: ['ring', 'tree', 'nvls', 'nvls_tree'], protocols: ['LL', 'LL128', 'Simple'] };
const MIB = 2 ** 20;

/** What AWS's tuner picks on `nodes` nodes of 8 ranks, as "algorithm protocol", or undefined. */
function pick(platform: 'p5' | 'p5en', nodes: number, bytes: number, offered = EVERYTHING): string | undefined {
  const c = awsAllReduceChoice(platform, { bytes, ranks: 8 * nodes, nodes }, offered);
  return c === undefined ? undefined : `${c.algorithm} ${c.protocol}`;
}

/** A region of the given vertices (bytes, ranks); its choice does not matter to regionHolds. */
function polygon(...vertices: [number, number][]) {
  return { algorithm: 'ring', protocol: 'Simple', vertices };
}

test('a region holds the points inside it and on its edges, in log2-log2 coordinates', () => {
  const square = polygon([1024, 4], [4096, 4], [4096, 16], [1024, 16]);
  assert.equal(regionHolds(square, [2048, 8]), true);
  assert.equal(regionHolds(square, [1024, 8]), true, 'on the left edge');
  assert.equal(regionHolds(square, [4096, 16]), true, 'a corner');
  assert.equal(regionHolds(square, [8192, 8]), false);
  assert.equal(regionHolds(square, [2048, 32]), false);
  // The diagonal from (1 KiB, 4) to (4 KiB, 16) is straight in log2-log2, and bends in plain numbers.
  const triangle = polygon([1024, 4], [4096, 4], [4096, 16]);
  assert.equal(regionHolds(triangle, [2048, 8]), true, 'on the log-scale diagonal');
  assert.equal(regionHolds(triangle, [2048, 9]), false, 'above it');
  assert.equal(regionHolds(triangle, [2560, 8]), true, 'below it');
});

test("AWS's P5 regions: the first that holds the call picks, from three nodes on, 8 ranks a node", () => {
  const choice = (nodes: number, bytes: number, offered = EVERYTHING) => pick('p5', nodes, bytes, offered);
  assert.equal(choice(4, 8), 'tree LL128');
  assert.equal(choice(4, 32 * MIB), 'tree LL128');
  assert.equal(choice(4, 64 * MIB), 'ring LL128');
  assert.equal(choice(4, 1024 * MIB), 'ring LL128');
  assert.equal(choice(4, 2048 * MIB), 'ring Simple');
  assert.equal(choice(8, 64 * MIB), 'tree LL128');
  assert.equal(choice(8, 2048 * MIB), 'ring LL128', '(2 GiB, 64 ranks) is a vertex of the ring LL128 region');
  assert.equal(choice(32, 512 * MIB), 'nvls_tree Simple');
  assert.equal(choice(32, 8192 * MIB), 'nvls_tree Simple');
  // Two nodes or fewer go to NCCL's tuner, as do other rank counts a node.
  assert.equal(choice(2, 1024 * MIB), undefined);
  assert.equal(awsAllReduceChoice('p5', { bytes: 2 ** 30, ranks: 16, nodes: 4 }, EVERYTHING), undefined);
  // What is not offered is passed over.
  const noNvls = { algorithms: ['ring', 'tree'], protocols: EVERYTHING.protocols };
  assert.equal(choice(32, 512 * MIB, noNvls), undefined, 'no other region holds it: NCCL picks');
  assert.equal(choice(8, 32 * MIB, { algorithms: ['ring', 'tree'], protocols: ['LL', 'Simple'] }), undefined);
  assert.equal(choice(4, 1024 * MIB, { algorithms: ['ring', 'tree'], protocols: ['LL', 'LL128'] }), 'ring LL128');
});

test("AWS's P5en regions: the tree over LL up to 192 KiB, the ring over Simple for large calls on few nodes", () => {
  const choice = (nodes: number, bytes: number) => pick('p5en', nodes, bytes);
  assert.equal(choice(4, 8), 'tree LL');
  assert.equal(choice(4, 1024 * 1024), 'tree LL128');
  // 4 nodes, 4 GiB: the ring, as AWS's tuner ran it (stas00/ml-engineering, 364.65 GB/s).
  assert.equal(choice(4, 4096 * MIB), 'ring Simple');
  assert.equal(choice(32, 4096 * MIB), 'nvls_tree Simple');
  assert.equal(choice(2, 4096 * MIB), undefined);
});

test("the regions' closing vertices lie where AWS's table extends them", () => {
  // Each extended vertex sits on the box's far side: 2^20 ranks or 100 GiB.
  for (const region of [...P5_ALL_REDUCE_REGIONS, ...P5EN_ALL_REDUCE_REGIONS]) {
    for (const [bytes, ranks] of region.vertices) {
      assert.ok(
        bytes <= 100 * 2 ** 30 + 1 && ranks <= 2 ** 20 + 1,
        `${region.algorithm} ${region.protocol}: ${bytes}, ${ranks}`,
      );
    }
  }
  const treeLl128 = P5_ALL_REDUCE_REGIONS[0].vertices;
  // (384 MiB, 2048) to (384 MiB, 4096) is vertical: extended up to 2^20 ranks at 384 MiB.
  const [bytes, ranks] = treeLl128[10];
  assert.ok(Math.abs(bytes - 402653184) < 1 && ranks === 2 ** 20, `${bytes}, ${ranks}`);
});
