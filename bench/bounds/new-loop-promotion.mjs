// What V8 itself promotes when a new async loop starts, with no tsccl code: two identical loops,
// one after the other, each awaiting a settled promise 200,000 times and keeping one object of
// each turn. Prints, per loop, its first scavenges: the bytes each moved to the old space and
// its cost. A young object that a scavenge finds alive twice is promoted, into old-space pages
// the thread may never have touched (a page fault each).
// Usage: node --max-semi-space-size=1 bench/bounds/new-loop-promotion.mjs [turns=200000]
import v8 from 'node:v8';

const turns = Number(process.argv[2] ?? 200_000);
const settled = Promise.resolve();
const kept = { last: undefined };
const turn = (i) => {
  kept.last = { i, pair: [i, i + 1], at: performance.now() };
  return settled;
};
const oldSpace = (heap) => heap.heapSpaceStatistics.find((s) => s.spaceName === 'old_space').spaceUsedSize;

async function first(n) {
  for (let i = 0; i < n; i++) await turn(i);
}
async function second(n) {
  for (let i = 0; i < n; i++) await turn(i);
}
for (const [name, loop] of [
  ['first loop', first],
  ['second loop', second],
]) {
  const profiler = new v8.GCProfiler();
  profiler.start();
  await loop(turns);
  const scavenges = profiler.stop().statistics.filter((gc) => gc.gcType === 'Scavenge');
  const shown = scavenges
    .slice(0, 6)
    .map(
      (gc) => `+${((oldSpace(gc.afterGC) - oldSpace(gc.beforeGC)) / 1024).toFixed(0)} KiB in ${gc.cost.toFixed(0)} us`,
    );
  console.log(`${name}: ${scavenges.length} scavenges, the first: ${shown.join(', ')}`);
}
