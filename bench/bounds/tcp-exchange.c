/*
 * The kernel's floor under a TCP exchange between two processes, with no runtime in the way:
 * as bench/bounds/tcp-exchange.mjs, two processes on loopback (Nagle off, non-blocking) send
 * `bytes` to each other at once, `rounds` times, reading straight into the destination and
 * sleeping in poll() whenever the socket can take or give nothing. Prints the mean microseconds
 * per exchange after two warm-up rounds.
 * Usage: tcp-exchange <bytes> <rounds>
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>

#include "loopback-pair.h"

/* Sends `bytes` from `out` while receiving `bytes` into `in`. */
static void exchange(int fd, const char *out, char *in, size_t bytes) {
  size_t sent = 0, got = 0;
  while (sent < bytes || got < bytes) {
    struct pollfd p = { fd, (short)((sent < bytes ? POLLOUT : 0) | (got < bytes ? POLLIN : 0)), 0 };
    if (poll(&p, 1, -1) < 0 && errno != EINTR) die("poll");
    if (sent < bytes) {
      ssize_t n = write(fd, out + sent, bytes - sent);
      if (n > 0) sent += (size_t)n;
      else if (n < 0 && errno != EAGAIN) die("write");
    }
    if (got < bytes) {
      ssize_t n = read(fd, in + got, bytes - got);
      if (n > 0) got += (size_t)n;
      else if (n == 0) { fprintf(stderr, "peer closed\n"); exit(1); }
      else if (errno != EAGAIN) die("read");
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: tcp-exchange <bytes> <rounds>\n"); return 2; }
  size_t bytes = strtoull(argv[1], NULL, 10);
  int rounds = atoi(argv[2]);
  if (bytes == 0 || rounds < 1) { fprintf(stderr, "bytes and rounds must be positive\n"); return 2; }
  pid_t child;
  int fd = loopback_pair(&child);
  char *out = malloc(bytes), *in = malloc(bytes);
  if (out == NULL || in == NULL) die("malloc");
  memset(out, 1, bytes);
  memset(in, 0, bytes);
  double start = 0;
  for (int r = 0; r < rounds + 2; r++) {
    if (r == 2) start = now_us();
    exchange(fd, out, in, bytes);
  }
  double us = (now_us() - start) / rounds;
  if (child != 0) {
    printf("%.1f\n", us);
    waitpid(child, NULL, 0);
  }
  return 0;
}
