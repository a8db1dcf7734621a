/* The register's workload: sets 1 to 5, each acknowledged, then reads the
 * register back, which must hold the last acknowledged value; reconnects
 * (and sends its request again) when the server went away. Usage:
 * register-client ADDRESS PORT [history]. Exits 1 when an acknowledged
 * write is lost; with "history", it writes what it asked and got to
 * /history.jsonl instead (JSON lines, the format dst's linearizability
 * checker reads) and leaves the judgement to it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in server;
static int fd = -1;
static FILE *history;

/* One line of the history: an operation's invocation or its result, at
 * the monotonic clock's time (the cluster's one clock). */
static void record(const char *type, const char *f, const char *value) {
  if (!history) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  fprintf(history, "{\"client\":1,\"type\":\"%s\",\"f\":\"%s\"%s%s%s,\"time\":%lld}\n",
          type, f, value ? ",\"value\":" : "", value ? value : "", "",
          (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  fflush(history);
}

static void connect_again(void) {
  if (fd >= 0) close(fd);
  for (;;) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&server, sizeof server) == 0) return;
    close(fd);
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, 0);
  }
}

/* Sends `request` and reads one line of answer into `out`, reconnecting
 * and sending again until it gets one. */
static void ask(const char *request, char *out, size_t size) {
  for (;;) {
    if (write(fd, request, strlen(request)) == (ssize_t)strlen(request)) {
      size_t have = 0;
      while (have < size - 1) {
        ssize_t n = read(fd, out + have, 1);
        if (n <= 0) break;
        if (out[have] == '\n') {
          out[have] = 0;
          return;
        }
        have++;
      }
    }
    connect_again();
  }
}

int main(int argc, char **argv) {
  server.sin_family = AF_INET;
  server.sin_port = htons(argc > 2 ? atoi(argv[2]) : 7000);
  inet_pton(AF_INET, argc > 1 ? argv[1] : "10.0.0.1", &server.sin_addr);
  if (argc > 3 && strcmp(argv[3], "history") == 0) history = fopen("/history.jsonl", "a");
  connect_again();
  char answer[64];
  for (int v = 1; v <= 5; v++) {
    char request[32], value[16];
    snprintf(request, sizeof request, "SET %d\n", v);
    snprintf(value, sizeof value, "%d", v);
    record("invoke", "write", value);
    ask(request, answer, sizeof answer);
    if (strcmp(answer, "OK") != 0) return 2;
    record("ok", "write", 0);
  }
  record("invoke", "read", 0);
  ask("GET\n", answer, sizeof answer);
  record("ok", "read", answer);
  printf("read %s\n", answer);
  if (history) return 0;
  if (strcmp(answer, "5") != 0) {
    fprintf(stderr, "lost an acknowledged write: read %s after setting 5\n", answer);
    return 1;
  }
  return 0;
}
