/* Two threads count visits into one counter on plain memory: no lock, no
 * atomic, no call inside the loop. Each `counter = counter + 1` is a load,
 * an add and a store, so a thread preempted between its load and its store
 * overwrites every increment the other made meanwhile, and the total comes
 * out short. Unmodified pthread C for static riscv64 Linux.
 *
 * Only a scheduler that can preempt after any instruction sees it: on the
 * emulator the explorer finds it in a few hundred runs. The process
 * executor switches C threads only at pthread calls (libdst interposes
 * them), and there is none between the load and the store, so it never
 * does (README: measured).
 *
 *   riscv64-linux-gnu-gcc -O1 -g -static -pthread examples/riscv/counter.c -o counter
 *   cargo dst-fuzz run --riscv ./counter --stop-on-finding
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 200

static volatile long counter;

static void *visit(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) counter = counter + 1;
    return NULL;
}

int main(void) {
    pthread_t a, b;
    if (pthread_create(&a, NULL, visit, NULL) || pthread_create(&b, NULL, visit, NULL)) return 2;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("counter %ld\n", counter);
    if (counter != 2 * ROUNDS) {
        fprintf(stderr, "lost %ld increments\n", 2 * ROUNDS - counter);
        abort();
    }
    return 0;
}
