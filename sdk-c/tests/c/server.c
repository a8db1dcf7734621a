/* The fork server's modes, for sdk-c's tests: each process start and each
 * setup appends a line to the file named in SERVER_LOG. Arguments:
 *   --persistent   the workload runs in dst_run (persistent mode)
 * The workload crashes (SIGSEGV) when its first decision is 13. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dst.h"

static void note(const char *what) {
    const char *path = getenv("SERVER_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%s\n", what);
    fclose(f);
}

static int state; /* reset by each run, as persistent mode requires */

static void workload(void) {
    state = 0;
    uint64_t a = dst_random_below(100);
    if (a == 13) *(volatile int *)0 = 1;
    for (int i = 0; i < 5; i++) state += (int)dst_random_below(10);
    DST_ALWAYS(state < 30, "the sum of five digits stays below 30", NULL);
    DST_SOMETIMES(a > 50, "the first decision is large", NULL);
    /* Two named faults, the second used twice; which one a run uses first
     * depends on its input. */
    if (a % 2) (void)dst_fault("odd first decision");
    (void)dst_fault("every run");
    (void)dst_fault("every run");
}

int main(int argc, char **argv) {
    note("start");
    note("setup"); /* stands for expensive setup */
    dst_setup_complete(NULL);
    if (argc > 1 && strcmp(argv[1], "--persistent") == 0) {
        dst_run(workload);
    } else {
        workload();
    }
    return 0;
}
