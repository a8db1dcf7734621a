/* dst.h for AFL++: the dst C API over AFL's input, so a dst target such as
 * examples/c-kv builds unchanged for afl-fuzz (bench/compare-afl.sh).
 * Decisions read the input bytes as dst does (big-endian, zero once the
 * input is used up); a failing must-hold assertion aborts; catalog,
 * details and events are dropped. Not part of dst: a benchmark fixture. */
#ifndef DST_AFL_H
#define DST_AFL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

static unsigned char dst__stdin[1 << 16];
static const unsigned char *dst__input;
static size_t dst__len, dst__at;
static bool dst__loaded;

/* The input: AFL's shared-memory test case (afl-clang-fast), else stdin. */
static void dst__load(void) {
    if (dst__loaded) return;
    dst__loaded = true;
    dst__at = 0;
#ifdef __AFL_FUZZ_TESTCASE_LEN
    dst__input = __AFL_FUZZ_TESTCASE_BUF;
    dst__len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
#else
    ssize_t n;
    dst__input = dst__stdin;
    dst__len = 0;
    while (dst__len < sizeof dst__stdin &&
           (n = read(0, dst__stdin + dst__len, sizeof dst__stdin - dst__len)) > 0)
        dst__len += (size_t)n;
#endif
}

static uint64_t dst__bytes(int width) {
    dst__load();
    uint64_t v = 0;
    for (int i = 0; i < width; i++)
        v = (v << 8) | (dst__at < dst__len ? dst__input[dst__at++] : 0);
    return v;
}

static inline uint64_t dst_random_u64(void) { return dst__bytes(8); }
static inline uint64_t dst_random_below(uint64_t n) {
    if (n <= 1) return 0;
    int width = 1;
    while (width < 8 && ((n - 1) >> (8 * width)) != 0) width++;
    return dst__bytes(width) % n;
}
static inline bool dst_random_bool(void) { return dst__bytes(1) & 1; }
static inline bool dst_fault(const char *name) { (void)name; return dst__bytes(1) >= 0xF0; }
static inline void dst_setup_complete(const char *d) { (void)d; }
static inline void dst_send_event(const char *n, const char *d) { (void)n; (void)d; }
static inline void dst_run(void (*body)(void)) {
#ifdef __AFL_LOOP
    while (__AFL_LOOP(10000)) {
        dst__loaded = false;
        body();
    }
#else
    body();
#endif
}

#define DST__MUST(c) do { if (!(c)) abort(); } while (0)
#define DST_ALWAYS(c, m, d) DST__MUST(c)
#define DST_ALWAYS_OR_UNREACHABLE(c, m, d) DST__MUST(c)
#define DST_SOMETIMES(c, m, d) do { (void)(c); } while (0)
#define DST_REACHABLE(m, d) do { } while (0)
#define DST_UNREACHABLE(m, d) abort()
#define DST_ALWAYS_GT(l, r, m, d) DST__MUST((l) > (r))
#define DST_ALWAYS_GE(l, r, m, d) DST__MUST((l) >= (r))
#define DST_ALWAYS_LT(l, r, m, d) DST__MUST((l) < (r))
#define DST_ALWAYS_LE(l, r, m, d) DST__MUST((l) <= (r))
#define DST_SOMETIMES_GT(l, r, m, d) do { } while (0)
#define DST_SOMETIMES_GE(l, r, m, d) do { } while (0)
#define DST_SOMETIMES_LT(l, r, m, d) do { } while (0)
#define DST_SOMETIMES_LE(l, r, m, d) do { } while (0)

#endif
