/* dst_kvm.c: the runtime of a guest of dst's KVM executor (freestanding
 * x86-64, no libc): start-up, memcpy/memset/memmove/memcmp, edge coverage
 * (-fsanitize-coverage=trace-pc, counted in a map the executor reads
 * after each run), and dst.h's functions, each a hypercall (port I/O to 0xE1:
 * rax the call, rdi, rsi, rdx, rcx, r8, r9 its arguments) that the executor
 * answers on the run's region exactly as libdst does natively (r9 is a
 * sixth argument).
 *
 * The run: _start runs the constructors, tells the executor it is at
 * main (the snapshot every run starts from), calls main, and main's
 * return ends the run with its status (0 passes). `cargo dst-fuzz cc
 * --kvm` compiles and links this file, without coverage of its own.
 */
#include <stddef.h>
#include <stdint.h>

#define DST_NO_SITE_MACROS
#include "dst.h"

enum {
    DST_CALL_RANDOM_U64 = 0,
    DST_CALL_RANDOM_BELOW = 1,
    DST_CALL_RANDOM_BOOL = 2,
    DST_CALL_FAULT = 3,
    DST_CALL_ASSERT = 4,
    DST_CALL_EVENT = 5,
    DST_CALL_SETUP_COMPLETE = 6,
    DST_CALL_AT_MAIN = 100,
    DST_CALL_EXIT = 101,
};

static long dst__hc(long n, long a, long b, long c, long d, long e) {
    register long r8 __asm__("r8") = e;
    long result;
    __asm__ volatile("outb %%al, $0xE1"
                     : "=a"(result)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "c"(d), "r"(r8)
                     : "memory");
    return result;
}

/* Edge coverage (gcc's -fsanitize-coverage=trace-pc: a call at every
 * basic block): the edge (previous block, this block) counted in a map
 * the executor reads, as AFL counts them. */
#define DST_EDGES (1 << 16)
uint8_t __dst_edges[DST_EDGES];
static uintptr_t dst__previous;

void __sanitizer_cov_trace_pc(void) {
    uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    pc = (pc ^ (pc >> 16)) * 0x9E3779B1u;
    uint8_t *counter = &__dst_edges[(pc ^ dst__previous) % DST_EDGES];
    *counter = (uint8_t)(*counter + 1);
    dst__previous = pc >> 1;
}

void *memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s) {
        while (n--) *d++ = *s++;
    } else {
        while (n--) d[n] = s[n];
    }
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x - *y;
    return 0;
}

extern int main(void);
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

__attribute__((noreturn, section(".text.dst_start"))) void _start(void) {
    for (void (**f)(void) = __init_array_start; f < __init_array_end; f++) (*f)();
    dst__hc(DST_CALL_AT_MAIN, 0, 0, 0, 0, 0);
    dst__hc(DST_CALL_EXIT, main(), 0, 0, 0, 0);
    for (;;) __asm__ volatile("pause");
}

static long dst__bits(double value) {
    union { double d; long l; } u = {value};
    return u.l;
}

void dst_register_catalog(const void *start, const void *stop) {
    (void)start;
    (void)stop;
}

void dst_assert_site(const struct dst_site *site, uint32_t *slot, bool condition,
                     const char *details_json) {
    (void)slot;
    dst__hc(DST_CALL_ASSERT, (long)site, condition, (long)details_json, 0, 0);
}

void dst_assert_cmp_site(const struct dst_site *site, uint32_t *slot, bool condition,
                         double left, double right, const char *details_json) {
    (void)slot;
    /* The sixth argument (right's bits) goes in r9. */
    register long r8 __asm__("r8") = dst__bits(left);
    register long r9 __asm__("r9") = dst__bits(right);
    long result;
    __asm__ volatile("outb %%al, $0xE1"
                     : "=a"(result)
                     : "a"((long)DST_CALL_ASSERT), "D"((long)site), "S"((long)condition),
                       "d"((long)details_json), "c"(1L), "r"(r8), "r"(r9)
                     : "memory");
    (void)result;
}

uint64_t dst_random_u64_at(const char *file, uint32_t line, uint32_t *slot) {
    (void)slot;
    return (uint64_t)dst__hc(DST_CALL_RANDOM_U64, 0, (long)file, line, 0, 0);
}

uint64_t dst_random_below_at(uint64_t n, const char *file, uint32_t line, uint32_t *slot) {
    (void)slot;
    return (uint64_t)dst__hc(DST_CALL_RANDOM_BELOW, (long)n, (long)file, line, 0, 0);
}

bool dst_random_bool_at(const char *file, uint32_t line, uint32_t *slot) {
    (void)slot;
    return dst__hc(DST_CALL_RANDOM_BOOL, 0, (long)file, line, 0, 0) != 0;
}

bool dst_fault_at(const char *name, const char *file, uint32_t line) {
    return dst__hc(DST_CALL_FAULT, (long)name, (long)file, line, 0, 0) != 0;
}

uint64_t dst_random_u64(void) { return dst_random_u64_at(NULL, 0, NULL); }
uint64_t dst_random_below(uint64_t n) { return dst_random_below_at(n, NULL, 0, NULL); }
bool dst_random_bool(void) { return dst_random_bool_at(NULL, 0, NULL); }
bool dst_fault(const char *name) { return dst_fault_at(name, NULL, 0); }

void dst_setup_complete(const char *details_json) {
    dst__hc(DST_CALL_SETUP_COMPLETE, (long)details_json, 0, 0, 0, 0);
}

void dst_run(void (*body)(void)) {
    if (body) body();
}

void dst_send_event(const char *name, const char *details_json) {
    dst__hc(DST_CALL_EVENT, (long)name, (long)details_json, 0, 0, 0);
}

/* One thread: these are the plain operations. */
void dst_yield(void) {}
uint64_t dst_atomic_load_u64(uint64_t *ptr) { return *ptr; }
void dst_atomic_store_u64(uint64_t *ptr, uint64_t value) { *ptr = value; }
uint64_t dst_atomic_fetch_add_u64(uint64_t *ptr, uint64_t delta) {
    uint64_t old = *ptr;
    *ptr = old + delta;
    return old;
}
int dst_atomic_cas_u64(uint64_t *ptr, uint64_t *expected, uint64_t desired) {
    if (*ptr == *expected) {
        *ptr = desired;
        return 1;
    }
    *expected = *ptr;
    return 0;
}
void dst_site(const char *file, unsigned line) {
    (void)file;
    (void)line;
}
