/* A small C program using every dst.h facility, for sdk-c's tests. */
#include <stdio.h>
#include "dst.h"

static void never_called(void) {
    DST_SOMETIMES(1, "a C sometimes nobody reaches", NULL);
}

int main(int argc, char **argv) {
    (void)argv;
    dst_setup_complete("{\"nodes\": 3}");
    uint64_t n = dst_random_below(100);
    bool coin = dst_random_bool();
    DST_ALWAYS(n < 100, "below stays in range", NULL);
    for (int i = 0; i < 2; i++) {
        DST_ALWAYS(n > 1000, "a C always that fails", "{\"why\": \"n is small\"}");
    }
    DST_SOMETIMES(coin, "the coin lands heads", NULL);
    DST_REACHABLE("the C program runs", NULL);
    DST_SOMETIMES_GT(n, 90, "n is sometimes large", NULL);
    DST_ALWAYS_LE(n, 99, "n is at most 99", "not json");
    if (dst_fault("lose a message")) {
        dst_send_event("message lost", "{\"n\": 1}");
    }
    if (argc > 5) never_called();
    printf("n=%llu coin=%d u64=%llu\n", (unsigned long long)n, coin,
           (unsigned long long)dst_random_u64());
    return 0;
}
