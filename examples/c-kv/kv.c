/* kv: an in-memory key-value store with a write-ahead log on a simulated
 * disk, tested with dst.
 *
 * A client issues puts and gets; the disk may fail an fsync and the machine
 * may crash (losing what was not synced) and recover by replaying the log.
 * Every choice is a dst decision, so the explorer steers the workload and
 * the faults, and a finding replays exactly.
 *
 * The bug: when the log grows past LOG_COMPACT records, it is compacted
 * into a snapshot. Compaction acknowledges the pending put before its fsync
 * and ignores that fsync's result. If that fsync fails and the machine
 * crashes before the next successful fsync, an acknowledged write is lost.
 * Ordinary puts retry a failed fsync and never acknowledge unsynced data.
 *
 * Build (from the repository root, after `cargo build -p dst-c`):
 *   gcc -g -fsanitize-coverage=trace-pc -Isdk-c/include examples/c-kv/kv.c \
 *       -Ltarget/debug -ldst -Wl,-rpath,$PWD/target/debug -o kv
 * Explore:  cargo dst-fuzz run --cmd -- ./kv
 * Replay:   DST_INPUT=fuzz/findings/kv/<finding>/input gdb --args ./kv
 * With --persistent, runs go through dst_run (one process, many runs).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dst.h"

#define KEYS 4
#define STEPS 24
#define LOG_CAP 64
#define LOG_COMPACT 8
#define FSYNC_RETRIES 3

struct record {
    uint8_t key;
    uint32_t value;
};

/* The simulated disk: a log, of which a prefix is durable. */
static struct {
    struct record log[LOG_CAP];
    int len;
    int synced;
} disk;

/* The store's memory, and what the client was told. Values only grow, so
 * a key holds its acknowledged value or a later one. */
static uint32_t table[KEYS];
static bool present[KEYS];
static uint32_t acked[KEYS];
static bool acked_present[KEYS];
static int recoveries, compactions;

static int disk_fsync(void) {
    if (dst_fault("fsync fails")) return -1;
    disk.synced = disk.len;
    return 0;
}

static void disk_append(uint8_t key, uint32_t value) {
    if (disk.len < LOG_CAP) disk.log[disk.len++] = (struct record){key, value};
}

static void crash_and_recover(void) {
    /* Unsynced records are lost; memory is lost. */
    disk.len = disk.synced;
    memset(table, 0, sizeof table);
    memset(present, 0, sizeof present);
    for (int i = 0; i < disk.len; i++) {
        table[disk.log[i].key] = disk.log[i].value;
        present[disk.log[i].key] = true;
    }
    recoveries++;
    DST_SOMETIMES(recoveries > 0, "recovery ran", NULL);
    for (int k = 0; k < KEYS; k++) {
        char details[128];
        snprintf(details, sizeof details,
                 "{\"key\": %d, \"acknowledged\": %u, \"recovered\": %u, \"present\": %s}",
                 k, acked[k], table[k], present[k] ? "true" : "false");
        DST_ALWAYS(!acked_present[k] || (present[k] && table[k] >= acked[k]),
                   "acknowledged writes survive a crash", details);
    }
}

/* Rewrites the log as one record per key. */
static void compact(uint8_t key, uint32_t value) {
    int n = 0;
    struct record snapshot[KEYS];
    for (int k = 0; k < KEYS; k++)
        if (present[k]) snapshot[n++] = (struct record){(uint8_t)k, table[k]};
    memcpy(disk.log, snapshot, sizeof(struct record) * (size_t)n);
    disk.len = n;
    disk.synced = 0; /* the old log is gone; the new one is not synced yet */
    compactions++;
    DST_SOMETIMES(compactions > 0, "the log was compacted", NULL);
    /* BUG: the put is acknowledged before the fsync, whose result is lost. */
    acked[key] = value;
    acked_present[key] = true;
    (void)disk_fsync();
}

static bool put(uint8_t key, uint32_t value) {
    disk_append(key, value);
    table[key] = value;
    present[key] = true;
    if (disk.len > LOG_COMPACT) {
        compact(key, value);
        return true;
    }
    for (int attempt = 0; attempt < FSYNC_RETRIES; attempt++) {
        if (disk_fsync() == 0) {
            acked[key] = value;
            acked_present[key] = true;
            return true;
        }
    }
    return false; /* not acknowledged: the client may not count on it */
}

static void get(uint8_t key) {
    DST_ALWAYS(!acked_present[key] || (present[key] && table[key] >= acked[key]),
               "a get returns the last acknowledged put", NULL);
}

static void workload(void) {
    memset(&disk, 0, sizeof disk);
    memset(table, 0, sizeof table);
    memset(present, 0, sizeof present);
    memset(acked, 0, sizeof acked);
    memset(acked_present, 0, sizeof acked_present);
    recoveries = compactions = 0;
    uint32_t next_value = 1;
    for (int step = 0; step < STEPS; step++) {
        uint8_t key = (uint8_t)dst_random_below(KEYS);
        if (dst_fault("machine crashes")) {
            crash_and_recover();
        } else if (dst_random_bool()) {
            get(key);
        } else {
            put(key, next_value++);
        }
    }
    DST_ALWAYS_LE(disk.len, LOG_CAP, "the log stays within the disk", NULL);
    DST_REACHABLE("the workload ran to its end", NULL);
}

int main(int argc, char **argv) {
    bool persistent = argc > 1 && strcmp(argv[1], "--persistent") == 0;
    dst_setup_complete("{\"keys\": 4}");
    if (persistent) {
        dst_run(workload);
    } else {
        workload();
    }
    return 0;
}
