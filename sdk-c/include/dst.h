/* dst.h: the dst SDK for C and C++ (C11; C++ through extern "C").
 *
 * Assertions name properties; decisions take every nondeterministic choice
 * from the explorer (or from DST_SEED / DST_INPUT in local mode, exactly as
 * the Rust SDK). Link with libdst (-ldst). details_json is a JSON object as a
 * string, or NULL; invalid JSON is reported, not fatal.
 *
 * Every assertion site also places a record in the `dst_catalog` section of
 * the binary, so every property is known before any run (read it with
 * `cargo dst-fuzz catalog BINARY`). Numeric assertions compare as double.
 */
#ifndef DST_H
#define DST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One catalog record's header; the message, condition and file follow it. */
struct dst_site {
    uint32_t magic;       /* DST_SITE_MAGIC */
    uint16_t kind;        /* DST_KIND_* */
    uint16_t header_size; /* sizeof(struct dst_site) */
    uint32_t size;        /* the whole record */
    uint32_t line;
    uint16_t message_len, condition_len, file_len, reserved;
};

#define DST_SITE_MAGIC 0x43545344u /* "DSTC" */
#define DST_KIND_ALWAYS 1
#define DST_KIND_ALWAYS_OR_UNREACHABLE 2
#define DST_KIND_SOMETIMES 3
#define DST_KIND_REACHABLE 4
#define DST_KIND_UNREACHABLE 5
#define DST_KIND_ALWAYS_GT 6
#define DST_KIND_ALWAYS_GE 7
#define DST_KIND_ALWAYS_LT 8
#define DST_KIND_ALWAYS_LE 9
#define DST_KIND_SOMETIMES_GT 10
#define DST_KIND_SOMETIMES_GE 11
#define DST_KIND_SOMETIMES_LT 12
#define DST_KIND_SOMETIMES_LE 13

void dst_assert_site(const struct dst_site *site, uint32_t *slot, bool condition,
                     const char *details_json);
void dst_assert_cmp_site(const struct dst_site *site, uint32_t *slot, bool condition,
                         double left, double right, const char *details_json);
void dst_register_catalog(const void *start, const void *stop);

uint64_t dst_random_u64(void);
uint64_t dst_random_below(uint64_t n);
bool dst_random_bool(void);
bool dst_fault(const char *name);
/* The same decisions at a call site: the dst_random_* macros below call
 * these with __FILE__ and __LINE__, so that each call site is its own
 * decision site, named by its line in replays. */
uint64_t dst_random_u64_at(const char *file, uint32_t line, uint32_t *slot);
uint64_t dst_random_below_at(uint64_t n, const char *file, uint32_t line, uint32_t *slot);
bool dst_random_bool_at(const char *file, uint32_t line, uint32_t *slot);
bool dst_fault_at(const char *name, const char *file, uint32_t line);

/* Define DST_NO_SITE_MACROS to call the plain functions instead (one
 * decision site per function). The macros use a GNU statement expression
 * (gcc and clang, in C and C++). */
#ifndef DST_NO_SITE_MACROS
#define dst_random_u64() \
    __extension__({ static uint32_t dst__id; dst_random_u64_at(__FILE__, __LINE__, &dst__id); })
#define dst_random_below(n) \
    __extension__({ static uint32_t dst__id; dst_random_below_at((n), __FILE__, __LINE__, &dst__id); })
#define dst_random_bool() \
    __extension__({ static uint32_t dst__id; dst_random_bool_at(__FILE__, __LINE__, &dst__id); })
#define dst_fault(name) dst_fault_at((name), __FILE__, __LINE__)
#endif

/* Declares setup done. Under an explorer with DST_DEFER=1 the fork server
 * starts here, so the setup before it runs once: call it before starting
 * threads. Without DST_DEFER the fork server starts before main. */
void dst_setup_complete(const char *details_json);
/* Persistent mode: calls body once per input in one process (under an
 * explorer's fork server; elsewhere once). body must reset its own state. */
void dst_run(void (*body)(void));
void dst_send_event(const char *name, const char *details_json);

/* Controlled threads. libdst interposes pthread_create, pthread_join, the
 * pthread mutex, condition variable and rwlock functions, sched_yield,
 * usleep and nanosleep: under an explorer (or a DST_INPUT / DST_SEED
 * replay) one thread runs at a time and each of these is a scheduling
 * point whose next thread is a decision; otherwise they are the C
 * library's. Plain shared memory is not seen: make racy accesses through
 * these helpers (sequentially consistent) or mark them with dst_yield(). */
void dst_yield(void);
uint64_t dst_atomic_load_u64(uint64_t *ptr);
void dst_atomic_store_u64(uint64_t *ptr, uint64_t value);
uint64_t dst_atomic_fetch_add_u64(uint64_t *ptr, uint64_t delta);
/* Stores desired and returns 1 if *ptr == *expected; else writes the
 * current value to *expected and returns 0. */
int dst_atomic_cas_u64(uint64_t *ptr, uint64_t *expected, uint64_t desired);
void dst_site(const char *file, unsigned line);

/* A static record for this site in the dst_catalog section, and a slot where
 * libdst caches the site's catalog index. */
#define DST__SITE(KIND, MSG, COND)                                                    \
    static const struct {                                                             \
        struct dst_site h;                                                            \
        char message[sizeof(MSG)];                                                    \
        char condition[sizeof(COND)];                                                 \
        char file[sizeof(__FILE__)];                                                  \
    } dst__site __attribute__((section("dst_catalog"), used, aligned(8))) = {        \
        {DST_SITE_MAGIC, (KIND), (uint16_t)sizeof(struct dst_site),                   \
         (uint32_t)sizeof(dst__site), (uint32_t)__LINE__, (uint16_t)sizeof(MSG),      \
         (uint16_t)sizeof(COND), (uint16_t)sizeof(__FILE__), 0},                      \
        MSG, COND, __FILE__};                                                         \
    static uint32_t dst__slot

#define DST__BOOL(KIND, COND_VALUE, COND_TEXT, MSG, DETAILS)                          \
    do {                                                                              \
        DST__SITE(KIND, MSG, COND_TEXT);                                              \
        dst_assert_site(&dst__site.h, &dst__slot, (COND_VALUE) ? true : false,       \
                        (DETAILS));                                                   \
    } while (0)

#define DST__CMP(KIND, LEFT, OP, RIGHT, MSG, DETAILS)                                 \
    do {                                                                              \
        DST__SITE(KIND, MSG, #LEFT " " #OP " " #RIGHT);                               \
        double dst__left = (double)(LEFT), dst__right = (double)(RIGHT);              \
        dst_assert_cmp_site(&dst__site.h, &dst__slot, dst__left OP dst__right,       \
                            dst__left, dst__right, (DETAILS));                        \
    } while (0)

#define DST_ALWAYS(cond, msg, details) \
    DST__BOOL(DST_KIND_ALWAYS, cond, #cond, msg, details)
#define DST_ALWAYS_OR_UNREACHABLE(cond, msg, details) \
    DST__BOOL(DST_KIND_ALWAYS_OR_UNREACHABLE, cond, #cond, msg, details)
#define DST_SOMETIMES(cond, msg, details) \
    DST__BOOL(DST_KIND_SOMETIMES, cond, #cond, msg, details)
#define DST_REACHABLE(msg, details) DST__BOOL(DST_KIND_REACHABLE, 1, "", msg, details)
#define DST_UNREACHABLE(msg, details) DST__BOOL(DST_KIND_UNREACHABLE, 1, "", msg, details)

#define DST_ALWAYS_GT(l, r, msg, d) DST__CMP(DST_KIND_ALWAYS_GT, l, >, r, msg, d)
#define DST_ALWAYS_GE(l, r, msg, d) DST__CMP(DST_KIND_ALWAYS_GE, l, >=, r, msg, d)
#define DST_ALWAYS_LT(l, r, msg, d) DST__CMP(DST_KIND_ALWAYS_LT, l, <, r, msg, d)
#define DST_ALWAYS_LE(l, r, msg, d) DST__CMP(DST_KIND_ALWAYS_LE, l, <=, r, msg, d)
#define DST_SOMETIMES_GT(l, r, msg, d) DST__CMP(DST_KIND_SOMETIMES_GT, l, >, r, msg, d)
#define DST_SOMETIMES_GE(l, r, msg, d) DST__CMP(DST_KIND_SOMETIMES_GE, l, >=, r, msg, d)
#define DST_SOMETIMES_LT(l, r, msg, d) DST__CMP(DST_KIND_SOMETIMES_LT, l, <, r, msg, d)
#define DST_SOMETIMES_LE(l, r, msg, d) DST__CMP(DST_KIND_SOMETIMES_LE, l, <=, r, msg, d)

/* Registers this binary's (or shared object's) catalog before main, so that
 * never-reached properties are known. Every file including dst.h does it;
 * libdst ignores repeats. */
extern const char __start_dst_catalog[] __attribute__((weak, visibility("hidden")));
extern const char __stop_dst_catalog[] __attribute__((weak, visibility("hidden")));
__attribute__((constructor, used)) static void dst__register_catalog(void) {
    if (__start_dst_catalog) dst_register_catalog(__start_dst_catalog, __stop_dst_catalog);
}

#ifdef __cplusplus
}
#endif

/* With <pthread.h> (and <sched.h>, <unistd.h>, <time.h>) included before
 * dst.h, the controlled pthread calls announce their source line, so a
 * schedule and a deadlock report name the program's lines. */
#if !defined(DST_NO_SITE_MACROS) && !defined(__cplusplus)
#define DST__AT(CALL) (dst_site(__FILE__, __LINE__), CALL)
#ifdef _PTHREAD_H
#define pthread_create(...) DST__AT(pthread_create(__VA_ARGS__))
#define pthread_join(...) DST__AT(pthread_join(__VA_ARGS__))
#define pthread_mutex_lock(...) DST__AT(pthread_mutex_lock(__VA_ARGS__))
#define pthread_mutex_trylock(...) DST__AT(pthread_mutex_trylock(__VA_ARGS__))
#define pthread_mutex_unlock(...) DST__AT(pthread_mutex_unlock(__VA_ARGS__))
#define pthread_cond_wait(...) DST__AT(pthread_cond_wait(__VA_ARGS__))
#define pthread_cond_timedwait(...) DST__AT(pthread_cond_timedwait(__VA_ARGS__))
#define pthread_cond_signal(...) DST__AT(pthread_cond_signal(__VA_ARGS__))
#define pthread_cond_broadcast(...) DST__AT(pthread_cond_broadcast(__VA_ARGS__))
#define pthread_rwlock_rdlock(...) DST__AT(pthread_rwlock_rdlock(__VA_ARGS__))
#define pthread_rwlock_wrlock(...) DST__AT(pthread_rwlock_wrlock(__VA_ARGS__))
#define pthread_rwlock_unlock(...) DST__AT(pthread_rwlock_unlock(__VA_ARGS__))
#endif
#ifdef _SCHED_H
#define sched_yield() DST__AT(sched_yield())
#endif
#define dst_yield() DST__AT(dst_yield())
#define dst_atomic_load_u64(...) DST__AT(dst_atomic_load_u64(__VA_ARGS__))
#define dst_atomic_store_u64(...) DST__AT(dst_atomic_store_u64(__VA_ARGS__))
#define dst_atomic_fetch_add_u64(...) DST__AT(dst_atomic_fetch_add_u64(__VA_ARGS__))
#define dst_atomic_cas_u64(...) DST__AT(dst_atomic_cas_u64(__VA_ARGS__))
#endif

#endif /* DST_H */
