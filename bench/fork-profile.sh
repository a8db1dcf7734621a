#!/usr/bin/env bash
# Where a fork-server run's time goes, dst against AFL++: a system-wide
# kernel profile (`perf record -e cpu-clock -a -g`) around 20,000 runs of
# examples/c-kv with each tool (`cargo dst-fuzz run --cmd` on core 1;
# `afl-fuzz -E 20000`, which binds itself to a core). Each sample goes to
# its process's role (the tool; the target: fork server and runs) and to
# the outermost kernel entry on its stack (fork, exit, page fault, wait;
# `user` when it has none). Prints microseconds per run of each; perf's own
# cost inflates every figure alike. Needs perf and Debian's afl++.
#   bash bench/fork-profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v afl-fuzz >/dev/null || { echo "afl-fuzz not found: apt-get install afl++" >&2; exit 2; }
source bench/kv-fork.sh
mkdir -p "$work/dst"
(cd "$work/dst" && perf record -q -a -g -F 4000 -e cpu-clock -o "$work/dst.data" -- taskset -c 1 \
  "$lib/cargo-dst-fuzz" run kv --runs 20000 --json --quiet --cmd -- "$work/kv-dst" \
  > "$work/dst.json" 2>/dev/null || true)
AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
  perf record -q -a -g -F 4000 -e cpu-clock -o "$work/afl.data" -- \
  afl-fuzz -i "$work/in" -o "$work/afl" -E 20000 -- "$work/kv-afl" >/dev/null 2>&1 || true
dst_runs=$(python3 -c "import json; print(json.load(open('$work/dst.json'))['executions'])")
afl_runs=$(awk -F: '$1 ~ /execs_done/ {print $2 + 0}' "$work/afl/default/fuzzer_stats")

profile() { # DATA RUNS TOOL_COMM -> lines "role entry us_per_run"
  perf script -i "$1" 2>/dev/null | python3 -c "
import collections, sys
runs, tool = int(sys.argv[1]), sys.argv[2]
rate = 4000  # samples a second on each core (-F 4000)
entries = [('kernel_clone', 'fork'), ('do_exit', 'exit'), ('do_group_exit', 'exit'),
           ('exc_page_fault', 'page faults'), ('wait4', 'wait'), ('futex', 'futex'),
           ('ksys_read', 'read'), ('ksys_write', 'write'), ('schedule', 'scheduling'),
           ('ret_from_fork', 'fork, child side')]
totals = collections.Counter()
def add(comm, frames):
    role = 'tool' if comm == tool else ('target' if comm.startswith('kv-') else None)
    if role is None:
        return
    entry = 'user' if frames and '[kernel' not in frames[0] else 'kernel, other'
    for frame in reversed(frames):
        hit = next((name for key, name in entries if key in frame), None)
        if hit:
            entry = hit
            break
    totals[(role, entry)] += 1
comm, frames = None, []
for line in sys.stdin:
    if not line.strip():
        if comm:
            add(comm, frames)
        comm, frames = None, []
    elif not line[0].isspace():
        comm, frames = line.split()[0], []
    else:
        frames.append(line.strip())
for (role, entry), n in sorted(totals.items(), key=lambda kv: -kv[1]):
    us = n / rate / runs * 1e6
    if us >= 0.5:
        print(f'{role:7} {entry:18} {us:6.1f}')
" "$2" "$3"
}
echo "== dst ($dst_runs runs): role, outermost kernel entry, us per run"
profile "$work/dst.data" "$dst_runs" cargo-dst-fuzz
echo "== AFL++ ($afl_runs runs)"
profile "$work/afl.data" "$afl_runs" afl-fuzz
