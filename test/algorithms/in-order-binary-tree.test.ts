import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inOrderDepth, inOrderTree, secondTreePosition } from '../../src/algorithms/in-order-binary-tree.js';

test("NCCL's in-order binary tree: one tree over every position, odd positions the leaves, depth at most ceil(log2 n)", () => {
  // The example trees.cc draws for 14 ranks.
  assert.deepEqual(inOrderTree(14, 0), { parent: undefined, children: [8] });
  assert.deepEqual(inOrderTree(14, 8), { parent: 0, children: [4, 12] });
  assert.deepEqual(inOrderTree(14, 12), { parent: 8, children: [10, 13] });
  assert.deepEqual(inOrderTree(14, 13), { parent: 12, children: [] });
  assert.deepEqual(inOrderTree(4, 2), { parent: 0, children: [1, 3] });
  for (let n = 1; n <= 300; n++) {
    for (let p = 0; p < n; p++) {
      const node = inOrderTree(n, p);
      for (const child of node.children) {
        assert.ok(child > 0 && child < n, `n=${n}: child ${child} of ${p}`);
        assert.equal(inOrderTree(n, child).parent, p, `n=${n}: ${child}'s parent is not ${p}`);
      }
      if (node.parent !== undefined)
        assert.ok(inOrderTree(n, node.parent).children.includes(p), `n=${n}: ${node.parent} does not list ${p}`);
      if (p % 2 === 1) assert.equal(node.children.length, 0, `n=${n}: odd ${p} has children`);
      assert.ok(inOrderDepth(n, p) <= Math.ceil(Math.log2(n)), `n=${n}: ${p} at depth ${inOrderDepth(n, p)}`);
    }
  }
});

test('the second tree makes every host inner in at most one tree, so no host serves more than four neighbours', () => {
  const degree = (n: number, p: number) => {
    const node = inOrderTree(n, p);
    return (node.parent === undefined ? 0 : 1) + node.children.length;
  };
  for (let n = 2; n <= 300; n++) {
    const seen = new Set<number>();
    for (let h = 0; h < n; h++) {
      const second = secondTreePosition(n, h);
      seen.add(second);
      assert.ok(degree(n, h) + degree(n, second) <= 4, `n=${n}: host ${h} serves ${degree(n, h) + degree(n, second)}`);
    }
    assert.equal(seen.size, n, `n=${n}: the second tree is not a permutation of the hosts`);
  }
  // The roots: position 0 of each tree (trees.cc: n - 1 when even, 1 when odd).
  assert.equal(secondTreePosition(8, 7), 0);
  assert.equal(secondTreePosition(7, 1), 0);
});
