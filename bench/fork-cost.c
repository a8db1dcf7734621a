/* What one fork-server run costs this machine before any program work:
 * fork, a child that writes PAGES pages of a 64-page buffer and exits, and
 * waitpid, 20,000 times. Optional libraries are loaded first (dlopen), to
 * see what their mappings add to each fork and exit.
 *   cc -O2 bench/fork-cost.c -o /tmp/fork-cost -ldl
 *   taskset -c 1 /tmp/fork-cost PAGES private|shared [LIBRARY...]
 * See docs/benchmarks.md ("C services"). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: fork-cost PAGES private|shared [LIBRARY...]\n");
    return 2;
  }
  int pages = atoi(argv[1]);
  int shared = strcmp(argv[2], "shared") == 0;
  if (pages < 0 || pages > 64) {
    fprintf(stderr, "fork-cost: PAGES is 0 to 64\n");
    return 2;
  }
  for (int i = 3; i < argc; i++)
    if (!dlopen(argv[i], RTLD_NOW)) {
      fprintf(stderr, "fork-cost: %s\n", dlerror());
      return 1;
    }
  char *buf = mmap(0, 4096 * 64, PROT_READ | PROT_WRITE,
                   (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    perror("fork-cost: mmap");
    return 1;
  }
  memset(buf, 1, 4096 * 64);
  int n = 20000;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p < 0) {
      perror("fork-cost: fork");
      return 1;
    }
    if (p == 0) {
      for (int j = 0; j < pages; j++) buf[j * 4096] = 2;
      _exit(0);
    }
    int status;
    waitpid(p, &status, 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n / 1e3;
  printf("%s, %d pages written, %d libraries loaded: %.1f us per fork and exit\n",
         shared ? "shared" : "private", pages, argc - 3, us);
  return 0;
}
