/* A lease holder, unmodified C for static riscv64 Linux, run on dst's
 * emulator: it reads the clock, draws a ticket with getrandom, reads the
 * clock again, and when more than 30 s passed (the lease expired) and the
 * ticket is 7 modulo 8 (another holder won the race) it aborts. Nominal
 * runs never get there: it takes a clock jump and one random value in 8.
 *
 *   riscv64-linux-gnu-gcc -O1 -g -static examples/riscv/lease.c -o lease
 *   cargo dst-fuzz run --riscv ./lease --stop-on-finding
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

int main(void) {
    struct timespec taken, now;
    unsigned char ticket = 0;
    clock_gettime(CLOCK_MONOTONIC, &taken);
    if (getrandom(&ticket, 1, 0) != 1) return 2;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long waited = (long)(now.tv_sec - taken.tv_sec);
    printf("waited %ld s, ticket %d\n", waited, ticket);
    if (waited > 30 && ticket % 8 == 7) {
        fprintf(stderr, "wrote under a lease another holder took\n");
        abort();
    }
    return 0;
}
