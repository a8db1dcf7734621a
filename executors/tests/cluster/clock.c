/* Clocks and datagrams between nodes, for the cluster's tests of clock
 * skew and datagram loss (tests/cluster.rs).
 *
 *   clock server PORT      answers each UDP datagram with its realtime
 *                          clock (nanoseconds, 8 bytes).
 *   clock client IP PORT   sends 5 pings, each waiting 20 ms for its
 *                          answer: exit 2 when one is lost (no retry),
 *                          exit 3 when the server's clock and its own
 *                          differ by more than 50 ms (a lease check that
 *                          assumes synchronized clocks). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static int64_t realtime(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET};
  if (argc == 3 && strcmp(argv[1], "server") == 0) {
    addr.sin_port = htons(atoi(argv[2]));
    if (bind(s, (struct sockaddr *)&addr, sizeof addr)) return 10;
    for (;;) {
      char ping[16];
      struct sockaddr_in from;
      socklen_t len = sizeof from;
      if (recvfrom(s, ping, sizeof ping, 0, (struct sockaddr *)&from, &len) < 0) return 11;
      int64_t now = realtime();
      sendto(s, &now, sizeof now, 0, (struct sockaddr *)&from, len);
    }
  }
  if (argc != 4) return 12;
  /* Datagrams sent before the server has bound are lost (as on any
   * network): give it time to start. */
  struct timespec start = {0, 10000000};
  nanosleep(&start, 0);
  addr.sin_port = htons(atoi(argv[3]));
  inet_pton(AF_INET, argv[2], &addr.sin_addr);
  for (int i = 0; i < 5; i++) {
    sendto(s, "ping", 4, 0, (struct sockaddr *)&addr, sizeof addr);
    struct pollfd p = {.fd = s, .events = POLLIN};
    if (poll(&p, 1, 20) != 1) {
      fprintf(stderr, "ping %d lost\n", i);
      return 2;
    }
    int64_t theirs;
    if (recv(s, &theirs, sizeof theirs, 0) != sizeof theirs) return 13;
    int64_t apart = llabs(theirs - realtime());
    if (apart > 50000000) {
      fprintf(stderr, "clocks %lld ms apart\n", (long long)(apart / 1000000));
      return 3;
    }
  }
  printf("5 pongs\n");
  return 0;
}
