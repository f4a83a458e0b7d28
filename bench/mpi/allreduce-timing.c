/*
 * Times MPI_Allreduce (float, sum) the way `tsccl bench` times all_reduce, for a side-by-side
 * comparison: for each size, 5 warm-up calls, a barrier, then the mean of `iters` back-to-back
 * calls, averaged over ranks; out-of-place and in-place (MPI_IN_PLACE).
 * Output: one line per size, "bytes oop_us ip_us", for bench/peers.mjs to read.
 * Usage: allreduce-timing <minBytes> <maxBytes> <factor> <iters>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double time_calls(float *in, float *out, size_t count, int iters, int in_place) {
  const void *src = in_place ? MPI_IN_PLACE : (const void *)in;
  float *dst = in_place ? in : out;
  for (int i = 0; i < 5; i++) MPI_Allreduce(src, dst, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; i++) MPI_Allreduce(src, dst, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double mine = (MPI_Wtime() - start) / iters, sum = 0;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / size * 1e6;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 5) {
    fprintf(stderr, "usage: %s minBytes maxBytes factor iters\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t min = strtoull(argv[1], NULL, 10), max = strtoull(argv[2], NULL, 10);
  int factor = atoi(argv[3]), iters = atoi(argv[4]), rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float *in = calloc(max / sizeof(float) + 1, sizeof(float));
  float *out = calloc(max / sizeof(float) + 1, sizeof(float));
  for (size_t bytes = min; bytes <= max; bytes *= factor) {
    size_t count = bytes / sizeof(float);
    double oop = time_calls(in, out, count, iters, 0);
    double ip = time_calls(in, out, count, iters, 1);
    if (rank == 0) printf("%zu %.3f %.3f\n", bytes, oop, ip);
    fflush(stdout);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
