#!/usr/bin/env bash
# What the fork server's learning runs save per run: examples/c-kv through
# `cargo dst-fuzz run --cmd` in fork-server mode, 20,000 runs, with
# DST_FORKSERVER_LEARN=0 and =1 in turn, ROUNDS times, on core 1. Prints
# exec/s and CPU per run (user + system of the explorer, server and runs,
# over the runs done), and, with perf, the largest number of file pages a
# forked child maps (kmem:rss_stat), median over children, and the page
# faults a child takes (page-faults), mean over children.
#   bash bench/fork-learn.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
source bench/kv-fork.sh

for r in $(seq "$rounds"); do
  read -r off_rate off_cpu < <(kv_run "$lib" DST_FORKSERVER_LEARN=0)
  read -r on_rate on_cpu < <(kv_run "$lib" DST_FORKSERVER_LEARN=1)
  echo "round $r: learning off $off_rate exec/s, $off_cpu us CPU per run; on $on_rate exec/s, $on_cpu us CPU per run"
done

command -v perf >/dev/null || { echo "perf not found: no page counts"; exit 0; }
for learn in 0 1; do
  rm -rf "$work/fuzz" && mkdir -p "$work/fuzz"
  (cd "$work/fuzz" && DST_FORKSERVER_LEARN=$learn perf record -q -e kmem:rss_stat -o "$work/rss.data" -- \
    "$lib/cargo-dst-fuzz" run kv --runs 1000 --json --quiet --cmd -- "$work/kv-dst" >/dev/null 2>&1 || true)
  perf script -i "$work/rss.data" 2>/dev/null | python3 -c "
import collections, re, statistics, sys
# A fork copies into a new mm (curr=0 events from the server): each such
# burst starts one child; its largest file-page count is what it mapped.
children, child, last = [], None, None
for line in sys.stdin:
    m = re.match(r'\s*(\S+)\s+\d+ .*curr=(\d) type=MM_FILEPAGES size=(\d+)B', line)
    if not m or not m.group(1).startswith('kv-'):
        continue
    curr, pages = m.group(2), int(m.group(3)) // 4096
    if curr == '0' and last != '0':
        child = [0]
        children.append(child)
    last = curr
    if child is not None:
        child[0] = max(child[0], pages)
print('learning $learn: file pages a child maps, median', statistics.median(c[0] for c in children[len(children) // 2:]))
"
  echo "learning $learn: page faults per child, mean $(kv_child_faults DST_FORKSERVER_LEARN=$learn)"
done
