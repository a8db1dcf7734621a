/* The KVM benchmark's program: examples/kvm/door.c's controller as a
 * persistent-mode body (dst_run), so that the process executor runs it
 * forked per run and in persistent mode, and the KVM executor as a guest
 * (where dst_run calls the body once per run). */
#include "dst.h"

enum { CLOSED, OPEN };
static int door, believed_open, locked;

static void command(int c) {
    switch (c) {
    case 0:
        if (locked) return;
        door = OPEN;
        if (!dst_fault("door sensor glitch")) believed_open = 1;
        break;
    case 1:
        door = CLOSED;
        believed_open = 0;
        break;
    case 2:
        if (!believed_open) locked = 1;
        break;
    default:
        locked = 0;
    }
}

static void body(void) {
    door = CLOSED;
    believed_open = locked = 0;
    for (int i = 0; i < 8; i++) {
        command((int)dst_random_below(4));
        DST_SOMETIMES(locked, "the door gets locked", NULL);
        DST_ALWAYS(!(locked && door == OPEN), "a locked door is closed", NULL);
    }
}

int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1)
        dst_run(body);
    else
        body();
    return 0;
}
