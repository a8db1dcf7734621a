#!/usr/bin/env bash
# What the fork server's learning runs save per run: examples/c-kv through
# `cargo dst-fuzz run --cmd` in fork-server mode, 20,000 runs, with
# DST_FORKSERVER_LEARN=0 and =1 in turn, ROUNDS times, on core 1. Prints
# exec/s and CPU per run (user + system of the explorer, server and runs,
# over the runs done), and, with perf, the largest number of file pages a
# forked child maps (kmem:rss_stat), median over children.
#   bash bench/fork-learn.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build -q --release -p dst-c -p dst-fuzz
lib=$PWD/target/release
clang -O2 -g -c -fsanitize-coverage=trace-pc-guard -Isdk-c/include examples/c-kv/kv.c -o "$work/kv.o"
clang "$work/kv.o" -L"$lib" -ldst -Wl,-rpath,"$lib" -o "$work/kv-dst"

run() { # LEARN -> "exec/s cpu_us_per_run"
  rm -rf "$work/fuzz" && mkdir -p "$work/fuzz"
  (cd "$work/fuzz" && /usr/bin/time -f "%U %S" -o "$work/time" env DST_FORKSERVER_LEARN="$1" \
    taskset -c 1 "$lib/cargo-dst-fuzz" run kv --runs 20000 --json --quiet --cmd -- "$work/kv-dst" \
    > "$work/out.json" 2>/dev/null || true)
  python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
d = json.load(open(f"{work}/out.json"))
user, system = map(float, open(f"{work}/time").read().split()[-2:])
print(int(d["exec_per_sec"]), int((user + system) / d["executions"] * 1e6))
EOF
}

for r in $(seq "$rounds"); do
  read -r off_rate off_cpu < <(run 0)
  read -r on_rate on_cpu < <(run 1)
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
done
