/* The C library's comparison functions, interposed for the whole program
 * (the harness and the libraries it links, whatever flags built them), as
 * libFuzzer's interceptors do: each calls the C library's own (found with
 * dlsym(RTLD_NEXT)) and, while a run logs comparisons, logs what it
 * compared (src/lib.rs: dst_engine_cmplog_*, into dst::cmplog), so the
 * explorer writes the other operand where the input held one. Logging is
 * one call that loads one word when no log is attached; a thread-local
 * guard keeps the logging code's own comparisons out. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

int dst_engine_cmplog_active(void);
void dst_engine_cmplog_bytes(const void *a, const void *b, size_t n);

static __thread int inside;

static size_t bounded_len(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n]) n++;
    return n;
}

static void log_bytes(const void *a, const void *b, size_t n) {
    if (inside || n == 0 || !dst_engine_cmplog_active()) return;
    inside = 1;
    dst_engine_cmplog_bytes(a, b, n);
    inside = 0;
}

static void log_strings(const char *a, const char *b, size_t max) {
    if (inside || !a || !b || !dst_engine_cmplog_active()) return;
    size_t la = bounded_len(a, max), lb = bounded_len(b, max);
    log_bytes(a, b, la < lb ? lb : la);
}

#define REAL(type, name) \
    static type real_##name; \
    if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)

typedef int (*memcmp_t)(const void *, const void *, size_t);
typedef int (*strcmp_t)(const char *, const char *);
typedef int (*strncmp_t)(const char *, const char *, size_t);

int memcmp(const void *a, const void *b, size_t n) {
    REAL(memcmp_t, memcmp);
    int result = real_memcmp(a, b, n);
    if (result) log_bytes(a, b, n);
    return result;
}

int bcmp(const void *a, const void *b, size_t n) {
    REAL(memcmp_t, bcmp);
    int result = real_bcmp(a, b, n);
    if (result) log_bytes(a, b, n);
    return result;
}

int strcmp(const char *a, const char *b) {
    REAL(strcmp_t, strcmp);
    int result = real_strcmp(a, b);
    if (result) log_strings(a, b, (size_t)-1);
    return result;
}

int strncmp(const char *a, const char *b, size_t n) {
    REAL(strncmp_t, strncmp);
    int result = real_strncmp(a, b, n);
    if (result) log_strings(a, b, n);
    return result;
}

int strcasecmp(const char *a, const char *b) {
    REAL(strcmp_t, strcasecmp);
    int result = real_strcasecmp(a, b);
    if (result) log_strings(a, b, (size_t)-1);
    return result;
}

int strncasecmp(const char *a, const char *b, size_t n) {
    REAL(strncmp_t, strncasecmp);
    int result = real_strncasecmp(a, b, n);
    if (result) log_strings(a, b, n);
    return result;
}
