/* Preloaded into a fork server by sdk-c's tests: a fork that behaves as
 * glibc's from 2.41 on (and musl's), which blocks every signal, then calls
 * other C library code (a read-write lock), then forks. A fault in there
 * cannot be handled: the server must not run such code on a closed page.
 * (The child skips glibc's own after-fork work: enough for these tests.) */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;

static long raw(long n, long a, long b, long c, long d) {
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
}

pid_t fork(void) {
    unsigned long all = ~0UL, old = 0;
    raw(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, 8);
    pthread_rwlock_rdlock(&lock);
    long pid = raw(SYS_clone, SIGCHLD, 0, 0, 0);
    pthread_rwlock_unlock(&lock);
    raw(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
    return pid < 0 ? -1 : (pid_t)pid;
}
