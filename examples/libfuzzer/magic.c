/* A libFuzzer harness, unmodified (nothing from dst): a record parser with
 * a 4-byte magic and a length field. The bug: a record whose length field
 * says more than the bytes that follow is copied anyway, past the end of
 * the buffer, into a fixed array; checked by abort() as a sanitizer would.
 *
 *   cargo dst-fuzz cc --libfuzzer -o magic examples/libfuzzer/magic.c
 *   cargo dst-fuzz run --cmd -- ./magic     (or: ./magic corpus/)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct record {
    uint8_t kind;
    uint8_t body[16];
};

static int parse(const uint8_t *data, size_t size, struct record *out) {
    if (size < 6 || memcmp(data, "DST!", 4) != 0) return -1;
    size_t length = data[4];
    out->kind = data[5];
    if (length > sizeof(out->body)) return -1;
    /* The bug: length is checked against the body, not against size. */
    if (6 + length > size) abort(); /* would read past the input */
    memcpy(out->body, data + 6, length);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct record r;
    if (parse(data, size, &r) == 0 && r.kind == 7) {
        /* a valid record of kind 7 */
        return 0;
    }
    return 0;
}
