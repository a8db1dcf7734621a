/* A service that misbehaves in every way a target can, each on its own
 * path chosen by a decision, for the explorer's reliability tests. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dst.h"

__attribute__((noinline)) static void null_write(volatile int *p) { *p = 42; }

__attribute__((noinline)) static void fail_hard(void) { abort(); }

static void spin(void) {
    for (volatile unsigned long i = 0;; i++) {
    }
}

/* Writes garbage over the region's header, as a buggy target might. */
static void scribble(void) {
    const char *name = getenv("DST_REGION");
    if (!name) return;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) return;
    unsigned char *base = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return;
    memset(base, 0xA5, 128);
}

/* Leaves a child behind that, if it lived, would write a marker file. */
static void leave_child(void) {
    if (fork() == 0) {
        usleep(300 * 1000);
        const char *marker = getenv("MISBEHAVE_MARKER");
        if (marker) {
            FILE *f = fopen(marker, "w");
            if (f) fclose(f);
        }
        _exit(0);
    }
}

int main(void) {
    switch (dst_random_below(9)) {
    case 1: null_write(NULL); break;
    case 2: fail_hard(); break;
    case 3: spin(); break;
    case 4: exit(0);
    case 5: scribble(); break;
    case 6: leave_child(); break;
    case 7: DST_ALWAYS(0, "path seven is never taken", NULL); break;
    case 8: scribble(); spin(); break;
    default: break;
    }
    DST_REACHABLE("main runs to its end", NULL);
    return 0;
}
