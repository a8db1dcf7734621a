#ifndef TLV_H
#define TLV_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int tlv_parse(const uint8_t *data, size_t size);
#ifdef __cplusplus
}
#endif
#endif
