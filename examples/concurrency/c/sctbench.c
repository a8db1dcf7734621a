/* The SCTBench ports of examples/concurrency in C: plain pthreads, with
 * libdst scheduling them. `sctbench PROGRAM [N]` runs one program:
 * account, lazy01, deadlock01, stack, twostage N, reorder N, wsq.
 *
 * Build: cc -std=c11 -O1 -o sctbench sctbench.c -I sdk-c/include -ldst -lpthread
 * Explore: cargo dst-fuzz run --runs 20000 --cmd -- ./sctbench reorder 5 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dst.h"

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;

static void spawn(pthread_t *t, void *(*f)(void *), void *arg) {
    if (pthread_create(t, NULL, f, arg) != 0) {
        perror("pthread_create");
        exit(2);
    }
}

/* account: a checker started first asserts the balance after a deposit and
 * a withdrawal, with the deposit's sign wrong. */
static long balance = 100;
static int deposited, withdrawn;
static void *account_check(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    if (deposited && withdrawn)
        DST_ALWAYS(balance == 100 - 20 - 30, "account: the balance after a deposit and a withdrawal", NULL);
    pthread_mutex_unlock(&m1);
    return NULL;
}
static void *account_deposit(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    balance += 20;
    deposited = 1;
    pthread_mutex_unlock(&m1);
    return NULL;
}
static void *account_withdraw(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    balance -= 30;
    withdrawn = 1;
    pthread_mutex_unlock(&m1);
    return NULL;
}

/* lazy01: a checker under the lock must never see the sum of the other
 * two threads' increments (3). */
static int data;
static void *lazy_check(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    DST_ALWAYS(data < 3, "lazy01: the checker never sees 3", NULL);
    pthread_mutex_unlock(&m1);
    return NULL;
}
static void *lazy_add(void *arg) {
    pthread_mutex_lock(&m1);
    data += (int)(long)arg;
    pthread_mutex_unlock(&m1);
    return NULL;
}

/* deadlock01: two locks taken in opposite orders. */
static void *deadlock_ab(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    pthread_mutex_lock(&m2);
    pthread_mutex_unlock(&m2);
    pthread_mutex_unlock(&m1);
    return NULL;
}
static void *deadlock_ba(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m2);
    pthread_mutex_lock(&m1);
    pthread_mutex_unlock(&m1);
    pthread_mutex_unlock(&m2);
    return NULL;
}

/* stack: the consumer pops whenever the producer's flag is up. */
#define STACK_N 5
static int stack_items[STACK_N], stack_top, stack_flag;
static void *stack_push(void *arg) {
    (void)arg;
    for (int i = 0; i < STACK_N; i++) {
        pthread_mutex_lock(&m1);
        stack_items[stack_top++] = i;
        stack_flag = 1;
        pthread_mutex_unlock(&m1);
    }
    return NULL;
}
static void *stack_pop(void *arg) {
    (void)arg;
    for (int i = 0; i < STACK_N; i++) {
        pthread_mutex_lock(&m1);
        if (stack_flag) {
            DST_ALWAYS(stack_top > 0, "stack: no pop underflows", NULL);
            if (stack_top > 0) stack_top--;
        }
        pthread_mutex_unlock(&m1);
    }
    return NULL;
}

/* twostage: writers set data1 under m1, then data2 = data1 + 1 under m2;
 * the reader must never see the first stage alone. */
static int data1, data2;
static void *twostage_write(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    data1 = 1;
    pthread_mutex_unlock(&m1);
    pthread_mutex_lock(&m2);
    pthread_mutex_lock(&m1);
    data2 = data1 + 1;
    pthread_mutex_unlock(&m1);
    pthread_mutex_unlock(&m2);
    return NULL;
}
static void *twostage_read(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m1);
    int first = data1;
    pthread_mutex_unlock(&m1);
    pthread_mutex_lock(&m2);
    int second = data2;
    pthread_mutex_unlock(&m2);
    DST_ALWAYS(first == 0 || second == first + 1, "twostage: the reader never sees the first stage alone", NULL);
    return NULL;
}

/* reorder: setters write a = 1 then b = -1; the checker sees both or neither. */
static uint64_t ra, rb;
static void *reorder_set(void *arg) {
    (void)arg;
    dst_atomic_store_u64(&ra, 1);
    dst_atomic_store_u64(&rb, (uint64_t)-1);
    return NULL;
}
static void *reorder_check(void *arg) {
    (void)arg;
    uint64_t x = dst_atomic_load_u64(&ra), y = dst_atomic_load_u64(&rb);
    DST_ALWAYS((x == 0 && y == 0) || (x == 1 && y == (uint64_t)-1), "reorder: the checker sees both writes or neither", NULL);
    return NULL;
}

/* wsq: a work-stealing deque whose owner takes the last item without the
 * compare-and-swap on top that would settle the race with a thief. */
#define WSQ_CAP 8
static uint64_t top, bottom, items[WSQ_CAP];
static int taken[4];
static void wsq_push(uint64_t v) {
    uint64_t b = dst_atomic_load_u64(&bottom);
    dst_atomic_store_u64(&items[b % WSQ_CAP], v);
    dst_atomic_store_u64(&bottom, b + 1);
}
static int wsq_pop(uint64_t *v) {
    uint64_t b = dst_atomic_load_u64(&bottom);
    if (b == 0) return 0;
    b -= 1;
    dst_atomic_store_u64(&bottom, b);
    uint64_t t = dst_atomic_load_u64(&top);
    if (t > b) {
        dst_atomic_store_u64(&bottom, t);
        return 0;
    }
    *v = dst_atomic_load_u64(&items[b % WSQ_CAP]);
    if (t == b) { /* the bug: no CAS on top here */
        dst_atomic_store_u64(&bottom, t + 1);
        dst_atomic_store_u64(&top, t + 1);
    }
    return 1;
}
static int wsq_steal(uint64_t *v) {
    uint64_t t = dst_atomic_load_u64(&top);
    uint64_t b = dst_atomic_load_u64(&bottom);
    if (t >= b) return 0;
    *v = dst_atomic_load_u64(&items[t % WSQ_CAP]);
    uint64_t expected = t;
    return dst_atomic_cas_u64(&top, &expected, t + 1);
}
static void *wsq_thief(void *arg) {
    (void)arg;
    for (int i = 0; i < 2; i++) {
        uint64_t v;
        if (wsq_steal(&v)) {
            pthread_mutex_lock(&m1);
            taken[v]++;
            pthread_mutex_unlock(&m1);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *program = argc > 1 ? argv[1] : "account";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    pthread_t t[64];
    int count = 0;
    if (!strcmp(program, "account")) {
        spawn(&t[count++], account_check, NULL);
        spawn(&t[count++], account_deposit, NULL);
        spawn(&t[count++], account_withdraw, NULL);
    } else if (!strcmp(program, "lazy01")) {
        spawn(&t[count++], lazy_check, NULL);
        spawn(&t[count++], lazy_add, (void *)1L);
        spawn(&t[count++], lazy_add, (void *)2L);
    } else if (!strcmp(program, "deadlock01")) {
        spawn(&t[count++], deadlock_ab, NULL);
        spawn(&t[count++], deadlock_ba, NULL);
    } else if (!strcmp(program, "stack")) {
        spawn(&t[count++], stack_push, NULL);
        spawn(&t[count++], stack_pop, NULL);
    } else if (!strcmp(program, "twostage")) {
        n = n < 2 ? 2 : n > 64 ? 64 : n;
        for (int i = 1; i < n; i++) spawn(&t[count++], twostage_write, NULL);
        spawn(&t[count++], twostage_read, NULL);
    } else if (!strcmp(program, "reorder")) {
        n = n < 1 ? 1 : n > 63 ? 63 : n;
        for (int i = 0; i < n; i++) spawn(&t[count++], reorder_set, NULL);
        spawn(&t[count++], reorder_check, NULL);
    } else if (!strcmp(program, "wsq")) {
        spawn(&t[count++], wsq_thief, NULL);
        for (uint64_t v = 1; v <= 3; v++) wsq_push(v);
        uint64_t v;
        while (wsq_pop(&v)) {
            pthread_mutex_lock(&m1);
            taken[v]++;
            pthread_mutex_unlock(&m1);
        }
    } else {
        fprintf(stderr, "sctbench: no program %s\n", program);
        return 2;
    }
    for (int i = 0; i < count; i++) pthread_join(t[i], NULL);
    if (!strcmp(program, "wsq"))
        DST_ALWAYS(taken[1] == 1 && taken[2] == 1 && taken[3] == 1, "wsq: every item is taken exactly once", NULL);
    return 0;
}
