/*
 * Times an MPI collective the way `tsccl bench` (and nccl-tests) time theirs, for a side-by-side
 * comparison: for each size, `warmup` calls (default 5), a barrier, then the mean of `iters` back-to-back
 * calls, averaged over ranks; out-of-place and in-place (MPI_IN_PLACE).
 *   allreduce  float sum over `bytes`
 *   allgather  `bytes` is the gathered total, each rank contributes bytes / size
 *   bcast      `bytes` from rank 0 (no separate output: both columns time the same call)
 * Output: one line per size, "bytes oop_us ip_us", for bench/peers.mjs to read.
 * Usage: collective-timing <allreduce|allgather|bcast> <minBytes> <maxBytes> <factor> <iters> [warmup]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { ALLREDUCE, ALLGATHER, BCAST };

static void call(enum op op, float *in, float *out, size_t count, int size, int rank, int in_place) {
  switch (op) {
  case ALLREDUCE:
    MPI_Allreduce(in_place ? MPI_IN_PLACE : (const void *)in, in_place ? in : out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    break;
  case ALLGATHER: {
    int block = (int)(count / size);
    if (in_place) MPI_Allgather(MPI_IN_PLACE, 0, MPI_FLOAT, out, block, MPI_FLOAT, MPI_COMM_WORLD);
    else MPI_Allgather(in + (size_t)rank * block, block, MPI_FLOAT, out, block, MPI_FLOAT, MPI_COMM_WORLD);
    break;
  }
  case BCAST:
    MPI_Bcast(in, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    break;
  }
}

static double time_calls(enum op op, float *in, float *out, size_t count, int warmup, int iters, int in_place) {
  int size, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < warmup; i++) call(op, in, out, count, size, rank, in_place);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; i++) call(op, in, out, count, size, rank, in_place);
  double mine = (MPI_Wtime() - start) / iters, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / size * 1e6;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: %s allreduce|allgather|bcast minBytes maxBytes factor iters [warmup]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  enum op op = strcmp(argv[1], "allgather") == 0 ? ALLGATHER : strcmp(argv[1], "bcast") == 0 ? BCAST : ALLREDUCE;
  if (op == ALLREDUCE && strcmp(argv[1], "allreduce") != 0) {
    fprintf(stderr, "unknown collective %s: expected allreduce, allgather or bcast\n", argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t min = strtoull(argv[2], NULL, 10), max = strtoull(argv[3], NULL, 10);
  int factor = atoi(argv[4]), iters = atoi(argv[5]), warmup = argc == 7 ? atoi(argv[6]) : 5, rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float *in = malloc(max + sizeof(float));
  float *out = malloc(max + sizeof(float));
  if (in == NULL || out == NULL) {
    fprintf(stderr, "cannot allocate two buffers of %zu bytes\n", max);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* Written once, as tsccl bench writes its pool: pages never written read as the kernel's
     shared zero page, which stays in cache and overstates copy bandwidth. 0x3c bytes make the
     float 0.0115. */
  memset(in, 0x3c, max + sizeof(float));
  memset(out, 0x3c, max + sizeof(float));
  for (size_t bytes = min; bytes <= max; bytes *= factor) {
    size_t count = bytes / sizeof(float);
    if (op == ALLGATHER && count % size != 0) continue; /* nccl-tests skips sizes that do not split */
    double oop = time_calls(op, in, out, count, warmup, iters, 0);
    double ip = time_calls(op, in, out, count, warmup, iters, 1);
    if (rank == 0) printf("%zu %.3f %.3f\n", bytes, oop, ip);
    fflush(stdout);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
