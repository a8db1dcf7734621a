/* A small service with sockets and files, for the cross-level test
 * (executors/tests/cross_level.rs): run natively (process level) and on
 * the emulator, it must print and write the same.
 *
 * argv[1] is its root folder (natively a copy of the seed folder; on the
 * emulator "/", the node's file system seeded from the same folder). A
 * server thread serves a client thread over TCP on 127.0.0.1 with epoll;
 * each request is appended to data/log and synced before it is answered;
 * then a UDP datagram to itself, a Unix socket pair, a pipe, and the log
 * renamed and read back. Everything it learns goes to stdout and to the
 * file "transcript"; nothing depends on the thread interleaving (each
 * request waits for its answer) or on the port the kernel picks. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static struct sockaddr_in server_addr;
static char answers[256];

static void *client(void *arg) {
  (void)arg;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, (struct sockaddr *)&server_addr, sizeof server_addr)) exit(20);
  const char *requests[] = {"set a 1\n", "set b 2\n", "get a\n"};
  for (int i = 0; i < 3; i++) {
    if (write(s, requests[i], strlen(requests[i])) < 0) exit(21);
    char buf[64] = {0};
    long n = read(s, buf, sizeof buf - 1);
    if (n <= 0) exit(22);
    strncat(answers, buf, sizeof answers - strlen(answers) - 1);
  }
  shutdown(s, SHUT_WR);
  char end;
  long last = read(s, &end, 1); /* 0: the server closed its side */
  snprintf(answers + strlen(answers), sizeof answers - strlen(answers), "eof %ld\n", last);
  close(s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || chdir(argv[1])) return 10;
  char greeting[32] = {0};
  int fd = open("conf/greeting", O_RDONLY);
  if (fd < 0 || read(fd, greeting, sizeof greeting - 1) <= 0) return 11;
  close(fd);
  greeting[strcspn(greeting, "\n")] = 0;
  mkdir("data", 0755);
  int log = open("data/log.tmp", O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0644);

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  server_addr.sin_family = AF_INET;
  server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr *)&server_addr, sizeof server_addr)) return 12;
  socklen_t len = sizeof server_addr;
  getsockname(listener, (struct sockaddr *)&server_addr, &len);
  listen(listener, 4);
  pthread_t t;
  pthread_create(&t, 0, client, 0);

  int ep = epoll_create1(0);
  struct epoll_event e = {.events = EPOLLIN, .data.fd = listener};
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &e);
  int conn = -1, served = 0, waits = 0;
  char store[2][8] = {"", ""};
  while (conn < 0 || served < 3) {
    struct epoll_event got;
    if (epoll_wait(ep, &got, 1, 5000) != 1) return 13;
    waits++;
    if (got.data.fd == listener) {
      conn = accept(listener, 0, 0);
      struct epoll_event c = {.events = EPOLLIN, .data.fd = conn};
      epoll_ctl(ep, EPOLL_CTL_ADD, conn, &c);
      continue;
    }
    char req[64] = {0};
    if (read(conn, req, sizeof req - 1) <= 0) return 14;
    char key, value[8] = {0}, reply[32];
    if (sscanf(req, "set %c %7s", &key, value) == 2) {
      strcpy(store[key - 'a'], value);
      snprintf(reply, sizeof reply, "ok %c\n", key);
    } else if (sscanf(req, "get %c", &key) == 1) {
      snprintf(reply, sizeof reply, "%c=%s\n", key, store[key - 'a']);
    } else {
      return 15;
    }
    dprintf(log, "%s", req);
    fsync(log); /* durable before it is answered */
    write(conn, reply, strlen(reply));
    served++;
  }
  char rest;
  long tail = read(conn, &rest, 1); /* the client's shutdown: 0 */
  close(conn);
  pthread_join(t, 0);
  close(log);
  rename("data/log.tmp", "data/log");
  int dir = open("data", O_RDONLY | O_DIRECTORY);
  fsync(dir);
  close(dir);

  /* UDP to itself. */
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(u, (struct sockaddr *)&ua, sizeof ua);
  len = sizeof ua;
  getsockname(u, (struct sockaddr *)&ua, &len);
  sendto(u, "dgram", 5, 0, (struct sockaddr *)&ua, sizeof ua);
  char dg[16] = {0};
  long dn = recvfrom(u, dg, sizeof dg - 1, 0, 0, 0);
  /* A Unix socket pair and a pipe. */
  int sp[2], p[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
  write(sp[0], "unix", 4);
  char ub[8] = {0};
  long un = read(sp[1], ub, sizeof ub - 1);
  pipe(p);
  write(p[1], "pipe", 4);
  close(p[1]);
  char pb[8] = {0};
  long pn = read(p[0], pb, sizeof pb - 1);
  long pe = read(p[0], pb + 4, 1);

  char logged[128] = {0};
  fd = open("data/log", O_RDONLY);
  long ln = read(fd, logged, sizeof logged - 1);
  struct stat st;
  fstat(fd, &st);
  close(fd);
  int gone = access("data/log.tmp", F_OK) == -1;

  char out[1024];
  int n = snprintf(out, sizeof out,
                   "%s\n%stail %ld waits>=4 %d\nlog %ld %ld gone %d\n%s"
                   "udp %ld %s\nunix %ld %s\npipe %ld %s eof %ld\n",
                   greeting, answers, tail, waits >= 4, ln, (long)st.st_size, gone, logged, dn,
                   dg, un, ub, pn, pb, pe);
  fputs(out, stdout);
  fflush(stdout);
  fd = open("transcript", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  write(fd, out, n);
  fsync(fd);
  close(fd);
  return 0;
}
