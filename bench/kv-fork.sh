# Sourced by the fork-server benchmarks (bench/compare-afl.sh,
# bench/fork-learn.sh, bench/fork-builds.sh, bench/fork-profile.sh), from
# the repository's root: makes a scratch directory $work (removed on exit),
# builds the release explorer and libdst ($lib) and examples/c-kv for dst
# and for AFL++ (kv_build), and times runs of the dst build through
# `cargo dst-fuzz run --cmd` in fork-server mode on core 1 (kv_run,
# kv_child_faults).

# $work/kv-dst against $lib's libdst (its RUNPATH; a run's LD_LIBRARY_PATH
# picks another); $work/kv-afl with afl-clang-fast and bench/afl/dst.h,
# which feeds the same decisions from AFL's test case; and AFL++'s seed,
# $work/in/seed.
kv_build() {
  clang -O2 -g -c -fsanitize-coverage=trace-pc-guard -Isdk-c/include examples/c-kv/kv.c -o "$work/kv.o"
  clang "$work/kv.o" -L"$lib" -ldst -Wl,-rpath,"$lib" -o "$work/kv-dst"
  if command -v afl-clang-fast >/dev/null; then
    AFL_QUIET=1 afl-clang-fast -O2 -g -Ibench/afl examples/c-kv/kv.c -o "$work/kv-afl" 2>/dev/null
  fi
  mkdir -p "$work/in" && printf 'AAAA' > "$work/in/seed"
}

# kv_run DIR [VAR=VALUE...]: 20,000 runs with DIR's cargo-dst-fuzz and
# libdst (and the variables given); prints exec/s and CPU per run (user +
# system of the explorer, server and runs, over the runs done).
kv_run() {
  local dir=$1
  shift
  rm -rf "$work/fuzz" && mkdir -p "$work/fuzz"
  (cd "$work/fuzz" && /usr/bin/time -f "%U %S" -o "$work/time" env LD_LIBRARY_PATH="$dir" "$@" \
    taskset -c 1 "$dir/cargo-dst-fuzz" run kv --runs 20000 --json --quiet --cmd -- "$work/kv-dst" \
    > "$work/out.json" 2>/dev/null || true)
  python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
d = json.load(open(f"{work}/out.json"))
user, system = map(float, open(f"{work}/time").read().split()[-2:])
print(int(d["exec_per_sec"]), int((user + system) / d["executions"] * 1e6))
EOF
}

# kv_child_faults [VAR=VALUE...]: page faults per forked child (perf, every
# fault counted) over 3,000 runs with $lib's explorer and libdst.
kv_child_faults() {
  local dir=$lib
  rm -rf "$work/fuzz" && mkdir -p "$work/fuzz"
  (cd "$work/fuzz" && env "$@" perf record -q -c 1 -e page-faults -o "$work/faults.data" -- \
    taskset -c 1 "$dir/cargo-dst-fuzz" run kv --runs 3000 --json --quiet --cmd -- "$work/kv-dst" \
    >/dev/null 2>&1 || true)
  perf script -F comm,pid -i "$work/faults.data" 2>/dev/null | python3 -c "
import collections, sys
# The fork server is the kv-dst process with the most faults; the others
# are its children (runs, and the learning runs).
faults = collections.Counter(l.split()[1] for l in sys.stdin if l.split()[0] == 'kv-dst')
server = faults.most_common(1)[0][0]
children = [n for pid, n in faults.items() if pid != server]
print(round(sum(children) / len(children), 1))
"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build -q --release -p dst-c -p dst-fuzz
lib=$PWD/target/release
kv_build
