/* A libFuzzer harness, unmodified (nothing from dst): a record parser with
 * a 4-byte magic (memcmp), a 16-bit version and a length field. The bug:
 * a record whose length field says more than the bytes that follow is
 * copied anyway, past the end of the input; checked by abort() as a
 * sanitizer would. The magic and the version are what comparison
 * feedback is for: mutation alone would take about 2^48 tries.
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
    if (size < 8 || memcmp(data, "DST!", 4) != 0) return -1;
    uint16_t version = (uint16_t)(data[4] | data[5] << 8);
    if (version != 0x0302) return -1;
    size_t length = data[6];
    out->kind = data[7];
    if (length > sizeof(out->body)) return -1;
    /* The bug: length is checked against the body, not against size. */
    if (8 + length > size) abort(); /* would read past the input */
    memcpy(out->body, data + 8, length);
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
