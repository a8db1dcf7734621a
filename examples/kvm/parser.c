/* A message parser as a KVM guest: a message is a kind byte, a length
 * and a payload, all decisions. For kind 7 with a length of exactly 13 it
 * looks the payload up in a table that was never filled in (a null
 * pointer): a page fault at address 0, on a path a nominal run never
 * takes. The executor reports it with the faulting line.
 *
 *   cargo dst-fuzz cc --kvm -o parser.elf examples/kvm/parser.c
 *   cargo dst-fuzz run --kvm parser.elf --stop-on-finding
 */
#include <stddef.h>
#include <stdint.h>

#include "dst.h"

static const uint8_t *handlers[16]; /* only some kinds have a handler */
static const uint8_t echo[32];

static int parse(void) {
    int kind = (int)dst_random_below(16);
    int length = (int)dst_random_below(32);
    int sum = 0;
    for (int i = 0; i < length; i++) sum += (int)dst_random_below(256);
    DST_SOMETIMES(kind == 7, "a kind 7 message arrives", NULL);
    if (kind == 7 && length == 13) return handlers[kind][sum % 32]; /* NULL */
    return echo[sum % 32];
}

int main(void) {
    handlers[1] = echo;
    return parse() == 0 ? 0 : 1;
}
