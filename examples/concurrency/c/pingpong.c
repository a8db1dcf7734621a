/* Switch cost: two threads yield to each other ROUNDS times each and the
 * program prints nanoseconds per yield. Under libdst's control (local mode,
 * DST_SEED=0: the nominal schedule, where each yield hands over) every
 * yield is a switch between OS threads; uncontrolled, sched_yield is the
 * kernel's. Used by examples/concurrency/benches/switch.rs.
 *
 * Build: cc -O2 -o pingpong pingpong.c -I sdk-c/include -ldst -lpthread
 * Run:   DST_SEED=0 ./pingpong 20000 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "dst.h"

static long rounds = 20000;

static void *player(void *arg) {
    for (long i = 0; i < rounds; i++)
        sched_yield();
    return arg;
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atol(argv[1]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t t;
    if (pthread_create(&t, NULL, player, NULL) != 0) {
        perror("pthread_create");
        return 2;
    }
    player(NULL);
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("%.1f\n", ns / (2.0 * (double)rounds));
    return 0;
}
