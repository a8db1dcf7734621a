/* The emulator benchmark's compute loop: integer arithmetic, branches,
 * loads and stores over a small table (a sieve and a mixing hash), the
 * work set by argv[1]. Built natively at -O2 and for riscv64 at -O2, the
 * benchmark compares the time of the same work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE 4096

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    static uint8_t composite[SIZE];
    uint64_t hash = 1469598103934665603ull;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < SIZE; i++) composite[i] = 0;
        long primes = 0;
        for (int i = 2; i < SIZE; i++) {
            if (composite[i]) continue;
            primes++;
            for (int j = i * 2; j < SIZE; j += i) composite[j] = 1;
        }
        hash = (hash ^ (uint64_t)(primes + r)) * 1099511628211ull;
    }
    printf("%llu\n", (unsigned long long)hash);
    return 0;
}
