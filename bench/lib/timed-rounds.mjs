// The median time of `rounds` runs of `way`, each after a barrier, so that every rank starts it together (ms).
export async function medianOfRounds(comm, way, rounds) {
  const times = [];
  for (let r = 0; r < rounds; r++) {
    await comm.barrier();
    const start = performance.now();
    await way();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[times.length >> 1];
}
