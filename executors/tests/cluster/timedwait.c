/* A condition variable's timed wait against the realtime clock (glibc's
 * pthread_cond_timedwait: FUTEX_WAIT_BITSET with FUTEX_CLOCK_REALTIME and
 * an absolute deadline), for the test that a node's clock skew moves the
 * deadline with the clock (tests/cluster.rs). Waits until 10 ms past its
 * realtime reading and exits 1 if less than 9 or more than 20 ms passed
 * on the monotonic clock (a deadline read against an unskewed clock). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

int main(void) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  struct timespec deadline, before, after;
  /* Idle once first: the cluster's runs start from that moment (its
   * snapshot after setup), so the readings below are each run's own. */
  struct timespec settle = {0, 1000000};
  nanosleep(&settle, 0);
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_nsec += 10000000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000;
  }
  clock_gettime(CLOCK_MONOTONIC, &before);
  pthread_mutex_lock(&m);
  int r = pthread_cond_timedwait(&c, &m, &deadline);
  pthread_mutex_unlock(&m);
  clock_gettime(CLOCK_MONOTONIC, &after);
  int64_t waited = ns(after) - ns(before);
  if (r != ETIMEDOUT) return 2;
  if (waited < 9000000 || waited > 20000000) {
    fprintf(stderr, "waited %lld us for a 10 ms deadline\n", (long long)(waited / 1000));
    return 1;
  }
  return 0;
}
