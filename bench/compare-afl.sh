#!/usr/bin/env bash
# exec/s of `cargo dst-fuzz run --cmd` against AFL++ on the same C target
# (examples/c-kv), side by side in one run, in the fork-server mode and in
# persistent mode. Both builds use clang with trace-pc-guard coverage
# (afl-clang-fast for AFL++; for dst, clang -fsanitize-coverage=trace-pc-guard
# against libdst); the AFL++ build takes its decisions from AFL's
# shared-memory test case through bench/afl/dst.h. Each binds itself to a
# free core (AFL++ by default, dst likewise). Needs Debian's afl++.
#   bash bench/compare-afl.sh [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-3}
command -v afl-fuzz >/dev/null || { echo "afl-fuzz not found: apt-get install afl++" >&2; exit 2; }

source bench/kv-fork.sh

dst_rate() { # args to the program
  rm -rf "$work/dst"
  # Exit status 1 means a finding (the example's bug): expected.
  (cd "$work" && mkdir -p dst && cd dst && \
    "$lib/cargo-dst-fuzz" run kv --time "${secs}s" --json --quiet --cmd -- "$work/kv-dst" "$@" 2>/dev/null || true) \
    | python3 -c "import json,sys; print(int(json.loads(sys.stdin.read())['exec_per_sec']))"
}
afl_rate() {
  rm -rf "$work/afl"
  AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
    afl-fuzz -i "$work/in" -o "$work/afl" -V "$secs" -- "$work/kv-afl" "$@" >/dev/null 2>&1 || true
  python3 -c "
for l in open('$work/afl/default/fuzzer_stats'):
    k, v = l.split(':', 1)
    if k.strip() == 'execs_done': done = int(v)
    if k.strip() == 'run_time': t = int(v)
print(int(done / max(t, 1)))"
}

for mode in fork persistent; do
  args=(); [ "$mode" = persistent ] && args=(--persistent)
  for r in $(seq "$rounds"); do
    d=$(dst_rate "${args[@]}")
    a=$(afl_rate "${args[@]}")
    python3 -c "print(f'$mode round $r: dst {$d:>6} exec/s   AFL++ {$a:>6} exec/s   dst/AFL++ {$d/$a:.2f}')"
  done
done
