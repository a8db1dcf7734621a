/* A service stopped in order, for the cluster's [stop] (tests/cluster.rs).
 *
 *   stop server MODE   listens on 7000 and waits in accept(); MODE says
 *                      what SIGTERM does: "orderly" (a handler without
 *                      SA_RESTART: accept returns EINTR, the server writes
 *                      "stopped" to /state, syncs it and exits 0), "broken"
 *                      (the same, but it exits 3), "restart" (a handler
 *                      with SA_RESTART, waiting in poll(), which Linux
 *                      never restarts: EINTR, then as "orderly"),
 *                      "default" (no handler:
 *                      SIGTERM's default action ends it), "ignore"
 *                      (SIG_IGN: it never stops).
 *   stop client        connects once to server:7000 (by name), then
 *                      exits 0: the workload. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t terminated;

static void on_term(int signal) {
  (void)signal;
  terminated = 1;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "server") == 0) {
    const char *mode = argv[2];
    if (strcmp(mode, "ignore") == 0) signal(SIGTERM, SIG_IGN);
    int restart = strcmp(mode, "restart") == 0;
    if (strcmp(mode, "orderly") == 0 || strcmp(mode, "broken") == 0 || restart) {
      struct sigaction action;
      memset(&action, 0, sizeof action);
      action.sa_handler = on_term; /* no SA_RESTART: accept returns EINTR */
      if (restart) action.sa_flags = SA_RESTART;
      sigaction(SIGTERM, &action, 0);
    }
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(7000)};
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 4)) return 10;
    for (;;) {
      if (restart) {
        struct pollfd p = {.fd = listener, .events = POLLIN};
        if (poll(&p, 1, -1) < 0) {
          if (errno == EINTR && terminated) break;
          continue;
        }
      }
      int conn = accept(listener, 0, 0);
      if (conn >= 0) {
        close(conn);
        continue;
      }
      if (errno == EINTR && terminated) break;
    }
    int fd = open("/state", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    write(fd, "stopped\n", 8);
    fsync(fd);
    close(fd);
    printf("stopped in order\n");
    return strcmp(mode, "broken") == 0 ? 3 : 0;
  }
  /* The server by its name: static glibc's getaddrinfo reads the node's
   * /etc/hosts (its files backend is built into libc since 2.34). */
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *server;
  if (getaddrinfo("server", "7000", &hints, &server)) return 20;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, server->ai_addr, server->ai_addrlen)) return 21;
  close(s);
  return 0;
}
