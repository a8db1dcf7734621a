/* For a harness linked with libdst (the fuzzing engine interposes these
 * functions itself, engine/src/intercept.c): force-included into its C
 * sources (-include dst_cmplog.h), memcmp, bcmp, strcmp and strncmp in
 * the harness's own code become libdst's, which log what they compare for
 * the explorer (and return what the C library's return). Not for C++
 * (std::memcmp). */
#ifndef DST_CMPLOG_H
#define DST_CMPLOG_H
#ifndef __cplusplus
#include <stddef.h>
#include <string.h>
#include <strings.h>
int dst_memcmp(const void *a, const void *b, size_t n);
int dst_bcmp(const void *a, const void *b, size_t n);
int dst_strcmp(const char *a, const char *b);
int dst_strncmp(const char *a, const char *b, size_t n);
#define memcmp(a, b, n) dst_memcmp((a), (b), (n))
#define bcmp(a, b, n) dst_bcmp((a), (b), (n))
#define strcmp(a, b) dst_strcmp((a), (b))
#define strncmp(a, b, n) dst_strncmp((a), (b), (n))
#endif
#endif
