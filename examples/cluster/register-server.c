/* A register served over TCP, kept in a file: "SET v\n" stores v and
 * answers "OK\n", "GET\n" answers "v\n". Usage: register-server PORT.
 *
 * The bug: a SET is acknowledged before its value is durable. The value
 * is written to value.tmp, renamed over value and the folder synced, but
 * only after the "OK" left; a crash in between loses an acknowledged
 * write, which the client sees after the server restarts. Built with
 * -DFIXED, the server makes the value durable first. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char value[64] = "0";

static void load(void) {
  int fd = open("value", O_RDONLY);
  if (fd < 0) return;
  ssize_t n = read(fd, value, sizeof value - 1);
  value[n > 0 ? n : 0] = 0;
  if (n <= 0) strcpy(value, "0");
  close(fd);
}

static void store(const char *v) {
  int fd = open("value.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) exit(2);
  if (write(fd, v, strlen(v)) != (ssize_t)strlen(v)) exit(2);
  fsync(fd);
  close(fd);
  rename("value.tmp", "value");
  int dir = open(".", O_RDONLY | O_DIRECTORY);
  fsync(dir);
  close(dir);
}

static void answer(int fd, const char *text) {
  if (write(fd, text, strlen(text)) < 0) { /* the client went away */ }
}

static void serve(int fd) {
  char line[128];
  size_t have = 0;
  for (;;) {
    ssize_t n = read(fd, line + have, sizeof line - 1 - have);
    if (n <= 0) return;
    have += n;
    char *end;
    while ((end = memchr(line, '\n', have))) {
      *end = 0;
      if (strncmp(line, "SET ", 4) == 0) {
        char v[64];
        snprintf(v, sizeof v, "%s", line + 4);
#ifdef FIXED
        store(v);
        strcpy(value, v);
        answer(fd, "OK\n");
#else
        strcpy(value, v);
        answer(fd, "OK\n");
        store(v);
#endif
      } else if (strcmp(line, "GET") == 0) {
        char out[80];
        snprintf(out, sizeof out, "%s\n", value);
        answer(fd, out);
      }
      size_t used = end + 1 - line;
      memmove(line, end + 1, have - used);
      have -= used;
    }
  }
}

int main(int argc, char **argv) {
  load();
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in at = {.sin_family = AF_INET,
                           .sin_port = htons(argc > 1 ? atoi(argv[1]) : 7000)};
  if (bind(s, (struct sockaddr *)&at, sizeof at) || listen(s, 8)) return 3;
  for (;;) {
    int c = accept(s, 0, 0);
    if (c < 0) continue;
    serve(c);
    close(c);
  }
}
