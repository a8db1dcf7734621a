/* dst_riscv.c: dst.h's functions in a guest of dst's emulator (static
 * riscv64 Linux). Each call is one `ecall` with a number of dst's own
 * (DST_ECALL + n, far outside Linux's system call numbers); the emulator
 * answers it on the run's region, exactly as libdst does natively, so the
 * same program takes the same decisions at both levels. The catalog is
 * read from the ELF's dst_catalog section, so registering it is a no-op.
 * `cargo dst-fuzz cc --riscv` compiles and links this file.
 *
 * Outside the emulator (qemu-riscv64, a real machine) the ecalls fail with
 * ENOSYS: decisions are then 0 (nominal) and assertions do nothing.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>

#define DST_NO_SITE_MACROS
#include "dst.h"

#define DST_ECALL 0x44535400L
enum {
    DST_CALL_RANDOM_U64 = 0,
    DST_CALL_RANDOM_BELOW = 1,
    DST_CALL_RANDOM_BOOL = 2,
    DST_CALL_FAULT = 3,
    DST_CALL_ASSERT = 4,
    DST_CALL_EVENT = 5,
    DST_CALL_SETUP_COMPLETE = 6,
};

static long dst__ecall(long n, long a0, long a1, long a2, long a3, long a4, long a5) {
    register long r0 __asm__("a0") = a0;
    register long r1 __asm__("a1") = a1;
    register long r2 __asm__("a2") = a2;
    register long r3 __asm__("a3") = a3;
    register long r4 __asm__("a4") = a4;
    register long r5 __asm__("a5") = a5;
    register long r7 __asm__("a7") = DST_ECALL + n;
    __asm__ volatile("ecall"
                     : "+r"(r0)
                     : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r7)
                     : "memory");
    /* Not under the emulator: Linux says ENOSYS; nominal values. */
    return r0 < 0 && r0 > -4096 ? 0 : r0;
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
    dst__ecall(DST_CALL_ASSERT, (long)site, condition, (long)details_json, 0, 0, 0);
}

void dst_assert_cmp_site(const struct dst_site *site, uint32_t *slot, bool condition,
                         double left, double right, const char *details_json) {
    (void)slot;
    dst__ecall(DST_CALL_ASSERT, (long)site, condition, (long)details_json, 1, dst__bits(left),
               dst__bits(right));
}

uint64_t dst_random_u64_at(const char *file, uint32_t line, uint32_t *slot) {
    (void)slot;
    return (uint64_t)dst__ecall(DST_CALL_RANDOM_U64, 0, (long)file, line, 0, 0, 0);
}

uint64_t dst_random_below_at(uint64_t n, const char *file, uint32_t line, uint32_t *slot) {
    (void)slot;
    return (uint64_t)dst__ecall(DST_CALL_RANDOM_BELOW, (long)n, (long)file, line, 0, 0, 0);
}

bool dst_random_bool_at(const char *file, uint32_t line, uint32_t *slot) {
    (void)slot;
    return dst__ecall(DST_CALL_RANDOM_BOOL, 0, (long)file, line, 0, 0, 0) != 0;
}

bool dst_fault_at(const char *name, const char *file, uint32_t line) {
    return dst__ecall(DST_CALL_FAULT, (long)name, (long)file, line, 0, 0, 0) != 0;
}

uint64_t dst_random_u64(void) { return dst_random_u64_at(NULL, 0, NULL); }
uint64_t dst_random_below(uint64_t n) { return dst_random_below_at(n, NULL, 0, NULL); }
bool dst_random_bool(void) { return dst_random_bool_at(NULL, 0, NULL); }
bool dst_fault(const char *name) { return dst_fault_at(name, NULL, 0); }

void dst_setup_complete(const char *details_json) {
    dst__ecall(DST_CALL_SETUP_COMPLETE, (long)details_json, 0, 0, 0, 0, 0);
}

void dst_run(void (*body)(void)) {
    if (body) body();
}

void dst_send_event(const char *name, const char *details_json) {
    dst__ecall(DST_CALL_EVENT, (long)name, (long)details_json, 0, 0, 0, 0);
}

/* Threads need no help here: the emulator can preempt after any
 * instruction, so these are the plain operations. */
void dst_yield(void) { sched_yield(); }
uint64_t dst_atomic_load_u64(uint64_t *ptr) { return __atomic_load_n(ptr, __ATOMIC_SEQ_CST); }
void dst_atomic_store_u64(uint64_t *ptr, uint64_t value) {
    __atomic_store_n(ptr, value, __ATOMIC_SEQ_CST);
}
uint64_t dst_atomic_fetch_add_u64(uint64_t *ptr, uint64_t delta) {
    return __atomic_fetch_add(ptr, delta, __ATOMIC_SEQ_CST);
}
int dst_atomic_cas_u64(uint64_t *ptr, uint64_t *expected, uint64_t desired) {
    return __atomic_compare_exchange_n(ptr, expected, desired, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}
void dst_site(const char *file, unsigned line) {
    (void)file;
    (void)line;
}
