/* A door controller as a KVM guest (freestanding C with dst.h, no libc):
 * commands arrive as decisions; a sensor glitch (a fault) makes the
 * controller miss that the door opened. The property: a locked door is
 * closed. It breaks only when the glitch hits an "open" right before a
 * "lock": the controller thinks the door is closed and locks it open.
 * Nominal runs (no glitch) never get there.
 *
 *   cargo dst-fuzz cc --kvm -o door.elf examples/kvm/door.c
 *   cargo dst-fuzz run --kvm door.elf --stop-on-finding
 */
#include "dst.h"

enum { CLOSED, OPEN } door = CLOSED;     /* the real door */
static int believed_open, locked;       /* what the controller knows */

static void command(int c) {
    switch (c) {
    case 0: /* open */
        if (locked) return;
        door = OPEN;
        if (!dst_fault("door sensor glitch")) believed_open = 1;
        break;
    case 1: /* close */
        door = CLOSED;
        believed_open = 0;
        break;
    case 2: /* lock */
        if (!believed_open) locked = 1;
        break;
    default: /* unlock */
        locked = 0;
    }
}

int main(void) {
    for (int i = 0; i < 8; i++) {
        command((int)dst_random_below(4));
        DST_SOMETIMES(locked, "the door gets locked", NULL);
        DST_ALWAYS(!(locked && door == OPEN), "a locked door is closed", NULL);
    }
    return 0;
}
