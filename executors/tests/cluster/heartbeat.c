/* Both ends of a heartbeat over TCP. As "server PORT [ADDRESS]" (bound to
 * ADDRESS, else any): answers each line
 * "ping" with "pong". As "client ADDRESS PORT": sends 20 pings 10 ms
 * apart and exits 1 when a pong takes more than 50 ms (the server is
 * unreachable: a partition, a pause). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int serve(int port, const char *address) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (address) inet_pton(AF_INET, address, &at.sin_addr);
  if (bind(s, (struct sockaddr *)&at, sizeof at) || listen(s, 4)) return 3;
  for (;;) {
    int c = accept(s, 0, 0);
    char buf[5];
    while (read(c, buf, 5) == 5) {
      if (write(c, "pong\n", 5) != 5) break;
    }
    close(c);
  }
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "server") == 0)
    return serve(atoi(argv[2]), argc > 3 ? argv[3] : 0);
  if (argc != 4 || strcmp(argv[1], "client") != 0) return 4;
  struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &server.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr *)&server, sizeof server)) return 5;
  for (int i = 0; i < 20; i++) {
    char buf[5];
    if (write(fd, "ping\n", 5) != 5) return 6;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 50) != 1) {
      fprintf(stderr, "no pong within 50 ms at ping %d\n", i);
      return 1;
    }
    if (read(fd, buf, 5) != 5) return 7;
    struct timespec pause = {0, 10000000};
    nanosleep(&pause, 0);
  }
  printf("20 pongs\n");
  return 0;
}
