/* A ledger with dst.h: payments are withdrawn from an account whose balance
 * must never go negative. Each payment checks the balance first, but when
 * the (simulated) bank link drops the acknowledgement, the client retries
 * and the retry withdraws again without checking: two drops on large
 * payments overdraw the account. The amounts are decisions and the drop is
 * a fault, so the explorer finds the overdraft; nominal runs never drop.
 *
 * The same source builds for both levels and takes the same decisions
 * there (a test checks it run by run):
 *   cargo dst-fuzz cc --riscv -o ledger examples/riscv/ledger.c
 *   cargo dst-fuzz run --riscv ./ledger --stop-on-finding
 *   cc -Isdk-c/include examples/riscv/ledger.c -Ltarget/debug -ldst -o ledger-native
 */
#include <stdio.h>

#include "dst.h"

static long balance = 100;

static void withdraw(long amount) { balance -= amount; }

static void pay(long amount) {
    if (balance < amount) return; /* declined */
    withdraw(amount);
    if (dst_fault("acknowledgement lost")) withdraw(amount); /* the retry */
}

int main(void) {
    for (int i = 0; i < 4; i++) {
        long amount = 10 + (long)dst_random_below(50);
        pay(amount);
        DST_SOMETIMES(balance < 20, "the account is nearly empty", NULL);
        DST_ALWAYS_GE(balance, 0, "the balance never goes negative", NULL);
    }
    printf("balance %ld\n", balance);
    return 0;
}
