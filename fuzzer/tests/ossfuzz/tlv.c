/* A small library for the OSS-Fuzz build test (fuzzer/tests/libfuzzer.rs):
 * type-length-value records. The bug: a record of type 0xC0DE copies its
 * value into a fixed buffer without checking the length; caught by abort()
 * as a sanitizer would, or, built with -DTLV_UNCHECKED, by
 * AddressSanitizer itself. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tlv.h"

int tlv_parse(const uint8_t *data, size_t size) {
    int records = 0;
    while (size >= 3) {
        unsigned type = (unsigned)data[0] << 8 | data[1];
        size_t len = data[2];
        if (len > size - 3) return -1;
        if (type == 0xC0DE) {
            char value[8];
#ifndef TLV_UNCHECKED
            if (len > sizeof value) abort(); /* would overflow value */
#endif
            memcpy(value, data + 3, len);
            records += value[len ? len - 1 : 0];
        }
        data += 3 + len;
        size -= 3 + len;
        records++;
    }
    return records;
}
