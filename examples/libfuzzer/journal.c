/* A libFuzzer harness over code that uses dst.h: the harness's bytes are
 * commands ('w' writes a record, 's' syncs), and the journal under test
 * asks dst whether a write is lost (a fault). Its bug: a lost write is
 * acknowledged anyway. Neither the bytes alone nor the fault alone break
 * "every acknowledged write is on disk after a sync": the explorer has to
 * choose both, the bytes and the fault, in one run.
 *
 *   cargo dst-fuzz cc --libfuzzer -o journal examples/libfuzzer/journal.c
 *   cargo dst-fuzz run --cmd -- ./journal
 */
#include <stddef.h>
#include <stdint.h>

#include "dst.h"

struct journal {
    unsigned on_disk, acknowledged;
};

static void write_record(struct journal *j) {
    if (!dst_fault("the write is lost")) j->on_disk++;
    j->acknowledged++; /* the bug: acknowledged even when lost */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct journal j = {0, 0};
    for (size_t i = 0; i < size; i++) {
        if (data[i] == 'w') write_record(&j);
        if (data[i] == 's') {
            DST_ALWAYS(j.on_disk == j.acknowledged,
                       "every acknowledged write is on disk after a sync", NULL);
        }
    }
    return 0;
}
