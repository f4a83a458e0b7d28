/*
 * The C twin of bench/bounds/tcp-sync-all-reduce.mjs: the same 2-process float32 all-reduce over
 * loopback TCP, one socket, non-blocking reads and writes in a loop that never sleeps, the whole
 * half reduced once it has arrived (Open MPI's order for 2 ranks). What the Node loop costs over
 * it is Node's; what tsccl costs over the Node loop is tsccl's. Out of place; prints the mean
 * microseconds per call after five warm-up calls, and how many output elements are wrong.
 * Usage: tcp-sync-all-reduce <bytes: a multiple of 8> <calls>
 */
#include <errno.h>
#include <sys/wait.h>

#include "loopback-pair.h"

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: tcp-sync-all-reduce <bytes> <calls>\n"); return 2; }
  size_t bytes = strtoull(argv[1], NULL, 10), half = bytes / 2;
  int calls = atoi(argv[2]);
  if (bytes == 0 || bytes % 8 != 0 || calls < 1) { fprintf(stderr, "bytes must be a positive multiple of 8, calls positive\n"); return 2; }
  pid_t child;
  int fd = loopback_pair(&child), rank = child == 0;
  float *input = malloc(bytes), *output = malloc(bytes), *scratch = malloc(half);
  if (input == NULL || output == NULL || scratch == NULL) die("malloc");
  for (size_t i = 0; i < bytes / 4; i++) input[i] = (float)(rank + 1);
  char *in = (char *)input, *out = (char *)output, *peer = (char *)scratch;
  size_t mine = rank * half, theirs = half - mine;
  double start = 0;
  for (int call = 0; call < calls + 5; call++) {
    if (call == 5) start = now_us();
    /* Out: the peer's half of the input, then this rank's reduced half. In: the same from the peer. */
    size_t sent = 0, received = 0, reduced = 0;
    while (sent < bytes || received < bytes) {
      if (sent < half + reduced) {
        const char *from = sent < half ? in + theirs + sent : out + mine + (sent - half);
        ssize_t n = write(fd, from, sent < half ? half - sent : reduced - (sent - half));
        if (n > 0) sent += (size_t)n;
        else if (errno != EAGAIN) die("write");
      }
      if (received < bytes) {
        char *into = received < half ? peer + received : out + theirs + (received - half);
        ssize_t n = read(fd, into, received < half ? half - received : bytes - received);
        if (n > 0) received += (size_t)n;
        else if (n == 0) { fprintf(stderr, "peer closed\n"); exit(1); }
        else if (errno != EAGAIN) die("read");
      }
      if (received >= half && reduced < half) {
        float *o = (float *)(out + mine), *a = (float *)(in + mine);
        for (size_t i = 0; i < half / 4; i++) o[i] = a[i] + scratch[i];
        reduced = half;
      }
    }
  }
  double us = (now_us() - start) / calls;
  if (child != 0) {
    size_t wrong = 0;
    for (size_t i = 0; i < bytes / 4; i++) wrong += output[i] != 3.0f;
    printf("%.0f us per call, %zu wrong\n", us, wrong);
    waitpid(child, NULL, 0);
  }
  return 0;
}
