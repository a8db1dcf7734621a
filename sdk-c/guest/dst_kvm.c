/* dst_kvm.c: the runtime of a guest of dst's KVM executor (freestanding
 * x86-64, no libc): start-up, memcpy/memset/memmove/memcmp/strlen, edge coverage
 * (-fsanitize-coverage=trace-pc, counted in a map the executor reads
 * after each run), and dst.h's functions, each a hypercall (port I/O to 0xE1:
 * rax the call, rdi, rsi, rdx, rcx, r8, r9 its arguments) that the executor
 * answers on the run's region exactly as libdst does natively (r9 is a
 * sixth argument) when the runtime cannot answer them itself.
 *
 * The region is in guest memory (at DST_REGION, laid out as everywhere
 * else: `dst::region`, whose layout and constants this file takes from
 * the generated `dst_region.h`), so the common case needs no exit: a
 * decision whose bytes are explicit in the input is taken here, past them
 * from the stream's tail (the SDK's ChaCha8 bytes, which the executor
 * writes at DST_TAIL before each run), and an assertion is counted here,
 * both by the dst-core crate's code compiled into the guest
 * (`dst_core_decide`, `dst_core_evaluate`: the record, the cursor, the
 * decision coverage, the trace hash and the site state written by the
 * code the SDK writes them with); only what needs the host is a
 * hypercall: a decision past
 * the tail provided, any decision or assertion of a run that is being
 * explained or recorded (its flags are set: site texts, events), and the
 * report of an assertion's first failure (its details).
 *
 * The run: _start checks the region's magic and version (another layout
 * is a hypercall that ends the guest), runs the constructors, tells the
 * executor it is at
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
    DST_CALL_REPORT = 7,
    DST_CALL_AT_MAIN = 100,
    DST_CALL_EXIT = 101,
    /* The region at DST_REGION_AT is not the layout this runtime was
     * built for (its magic or version differ): the guest stops. */
    DST_CALL_BAD_REGION = 102,
};

/* The region's layout and the protocol's constants: `dst_region.h`, made
 * from the dst crate's types (`dst::region::c_header`) by the executor
 * when the guest is built, with where the executor puts the region and
 * the tail (DST_REGION_AT, DST_TAIL_AT, DST_TAIL_BYTES). */
#include "dst_region.h"

#ifdef DST_KVM_NATIVE_TEST
/* The runtime's region code run natively, by a test that compares it
 * with the Rust protocol (`executors/tests/kvm_runtime.rs`): the region
 * and tail are where the test put them, and a call that needs the host
 * is the test's. */
extern volatile struct dst__header *dst__test_region;
extern const uint8_t *dst__test_tail;
long dst__test_hc(long n, long a, long b, long c, long d, long e, long f);
#define DST_REGION dst__test_region
#define DST_TAIL dst__test_tail
#else
#define DST_REGION ((volatile struct dst__header *)DST_REGION_AT)
/* The decision stream past the input's explicit bytes (the SDK's ChaCha8
 * tail), written by the executor before each plain run. */
#define DST_TAIL ((const uint8_t *)DST_TAIL_AT)
#endif

/* Whether this run is plain (not explained, not recorded): then the
 * runtime writes the region itself. */
static int dst__plain(void) { return DST_REGION->flags == 0; }

/* The protocol's writes, compiled from the dst-core crate into this
 * guest (`dst_core::guest`): the same code the dst crate runs natively. */
extern bool dst_core_decide(volatile struct dst__header *region, const uint8_t *tail,
                            uint64_t tail_len, uint8_t kind, uint32_t site, uint32_t width,
                            uint64_t modulus, uint64_t *value);
extern bool dst_core_evaluate(volatile struct dst__header *region, uint64_t index, uint16_t kind,
                              bool condition, bool numeric, double left, double right);
extern uint32_t dst_core_site_hash(const char *file, uint32_t line);
extern uint32_t dst_core_below_width(uint64_t n);

/* Takes the next `width` bytes of the decision stream as one decision of
 * `kind` at `site`; 0 when the host must take it. */
static int dst__decide(uint8_t kind, uint32_t site, unsigned width, uint64_t modulus,
                       uint64_t *value) {
    return dst_core_decide(DST_REGION, DST_TAIL, DST_TAIL_BYTES, kind, site, width, modulus,
                           value);
}

/* The site id of a call site, cached in *slot as libdst caches it. */
static uint32_t dst__call_site(const char *file, uint32_t line, uint32_t *slot) {
    if (!file) return 0;
    if (slot && *slot) return *slot;
    uint32_t id = dst_core_site_hash(file, line);
    if (slot) *slot = id;
    return id;
}

extern const char __start_dst_catalog[] __attribute__((weak));

/* The catalog index of the record at `site` (the SDK's own sites first,
 * then the section's records in order), cached in *slot as index + 1. */
static uint64_t dst__index(const struct dst_site *site, uint32_t *slot) {
    if (*slot) return *slot - 1;
    uint64_t index = DST_BUILTIN_SITES;
    const char *at = __start_dst_catalog;
    while (at < (const char *)site) {
        const struct dst_site *record = (const struct dst_site *)at;
        if (record->magic == 0) {
            at += 8;
            continue;
        }
        index++;
        at += (record->size + 7) / 8 * 8;
    }
    *slot = (uint32_t)(index + 1);
    return index;
}

#ifdef DST_KVM_NATIVE_TEST
#define dst__hc dst__test_hc
#else
static long dst__hc(long n, long a, long b, long c, long d, long e, long f) {
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long result;
    __asm__ volatile("outb %%al, $0xE1"
                     : "=a"(result)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "c"(d), "r"(r8), "r"(r9)
                     : "memory");
    return result;
}
#endif

#ifndef DST_KVM_NATIVE_TEST
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

/* Weak: a guest may bring its own. */
__attribute__((weak)) size_t strlen(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x - *y;
    return 0;
}

/* Called as main(0, NULL): a guest has no command line. */
extern int main(int argc, char **argv);
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

__attribute__((noreturn, section(".text.dst_start"))) void _start(void) {
    volatile struct dst__header *r = DST_REGION;
    if (r->magic != DST_REGION_MAGIC || r->version != DST_REGION_VERSION)
        dst__hc(DST_CALL_BAD_REGION, (long)r->magic, (long)r->version, 0, 0, 0, 0);
    for (void (**f)(void) = __init_array_start; f < __init_array_end; f++) (*f)();
    dst__hc(DST_CALL_AT_MAIN, 0, 0, 0, 0, 0, 0);
    dst__hc(DST_CALL_EXIT, main(0, NULL), 0, 0, 0, 0, 0);
    for (;;) __asm__ volatile("pause");
}
#endif

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
    if (dst__plain()) {
        uint64_t index = dst__index(site, slot);
        if (!dst_core_evaluate(DST_REGION, index, site->kind, condition, 0, 0, 0)) return;
        /* A first failure: the host reports it, with its details. */
        dst__hc(DST_CALL_REPORT, (long)index, condition, (long)details_json, 0, 0, 0);
        return;
    }
    dst__hc(DST_CALL_ASSERT, (long)site, condition, (long)details_json, 0, 0, 0);
}

void dst_assert_cmp_site(const struct dst_site *site, uint32_t *slot, bool condition,
                         double left, double right, const char *details_json) {
    if (dst__plain()) {
        uint64_t index = dst__index(site, slot);
        if (!dst_core_evaluate(DST_REGION, index, site->kind, condition, 1, left, right)) return;
        dst__hc(DST_CALL_REPORT, (long)index, condition, (long)details_json, 1, dst__bits(left),
                dst__bits(right));
        return;
    }
    dst__hc(DST_CALL_ASSERT, (long)site, condition, (long)details_json, 1, dst__bits(left),
            dst__bits(right));
}

uint64_t dst_random_u64_at(const char *file, uint32_t line, uint32_t *slot) {
    uint64_t v;
    if (dst__decide(DST_U64, dst__call_site(file, line, slot), 8, 0, &v)) return v;
    return (uint64_t)dst__hc(DST_CALL_RANDOM_U64, 0, (long)file, line, 0, 0, 0);
}

uint64_t dst_random_below_at(uint64_t n, const char *file, uint32_t line, uint32_t *slot) {
    uint64_t v;
    unsigned width = dst_core_below_width(n);
    if (width == 0) return 0;
    if (dst__decide(DST_BELOW, dst__call_site(file, line, slot), width, n, &v)) return v;
    return (uint64_t)dst__hc(DST_CALL_RANDOM_BELOW, (long)n, (long)file, line, 0, 0, 0);
}

bool dst_random_bool_at(const char *file, uint32_t line, uint32_t *slot) {
    uint64_t v;
    if (dst__decide(DST_BOOL, dst__call_site(file, line, slot), 1, 0, &v)) return v != 0;
    return dst__hc(DST_CALL_RANDOM_BOOL, 0, (long)file, line, 0, 0, 0) != 0;
}

bool dst_fault_at(const char *name, const char *file, uint32_t line) {
    uint64_t v;
    if (name && dst__decide(DST_FAULT, dst_core_site_hash(name, 0), 1, 0, &v)) return v != 0;
    return dst__hc(DST_CALL_FAULT, (long)name, (long)file, line, 0, 0, 0) != 0;
}

uint64_t dst_random_u64(void) { return dst_random_u64_at(NULL, 0, NULL); }
uint64_t dst_random_below(uint64_t n) { return dst_random_below_at(n, NULL, 0, NULL); }
bool dst_random_bool(void) { return dst_random_bool_at(NULL, 0, NULL); }
bool dst_fault(const char *name) { return dst_fault_at(name, NULL, 0); }

void dst_setup_complete(const char *details_json) {
    dst__hc(DST_CALL_SETUP_COMPLETE, (long)details_json, 0, 0, 0, 0, 0);
}

void dst_run(void (*body)(void)) {
    if (body) body();
}

void dst_send_event(const char *name, const char *details_json) {
    dst__hc(DST_CALL_EVENT, (long)name, (long)details_json, 0, 0, 0, 0);
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
