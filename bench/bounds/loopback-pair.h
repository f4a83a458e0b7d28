/*
 * What the C bounds share: a clock, a fatal error, and two processes joined by one TCP socket
 * over loopback (Nagle off, non-blocking), as tsccl's ranks and Open MPI's tcp btl use it.
 */
#ifndef TSCCL_LOOPBACK_PAIR_H
#define TSCCL_LOOPBACK_PAIR_H
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* Forks; returns the connected socket in both processes and sets *child to fork()'s result. */
static int loopback_pair(pid_t *child) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 1) || getsockname(listener, (struct sockaddr *)&addr, &len)) die("listen");
  *child = fork();
  if (*child < 0) die("fork");
  int fd;
  if (*child == 0) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr)) die("connect");
  } else if ((fd = accept(listener, NULL, NULL)) < 0) die("accept");
  close(listener);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}
#endif
