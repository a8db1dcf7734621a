#!/usr/bin/env bash
# The fork-server path of two builds side by side: examples/c-kv through
# `cargo dst-fuzz run --cmd`, 20,000 runs, with the explorer and libdst of
# commit BASE (built in a git worktree, its own target directory) and of
# this checkout in turn, ROUNDS times, on core 1. One c-kv binary; each
# run picks its libdst with LD_LIBRARY_PATH. Prints exec/s and CPU per run
# (user + system of the explorer, server and runs, over the runs done).
#   bash bench/fork-builds.sh BASE [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bash bench/fork-builds.sh BASE [ROUNDS]}
rounds=${2:-3}
work=$(mktemp -d)
tree=$work/base
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$tree" "$base"
(cd "$tree" && cargo build -q --release -p dst-c -p dst-fuzz)
cargo build -q --release -p dst-c -p dst-fuzz
clang -O2 -g -c -fsanitize-coverage=trace-pc-guard -Isdk-c/include examples/c-kv/kv.c -o "$work/kv.o"
clang "$work/kv.o" -L"$PWD/target/release" -ldst -o "$work/kv-dst"

run() { # TARGET_DIR -> "exec/s cpu_us_per_run"
  rm -rf "$work/fuzz" && mkdir -p "$work/fuzz"
  (cd "$work/fuzz" && /usr/bin/time -f "%U %S" -o "$work/time" env LD_LIBRARY_PATH="$1" \
    taskset -c 1 "$1/cargo-dst-fuzz" run kv --runs 20000 --json --quiet --cmd -- "$work/kv-dst" \
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
  read -r base_rate base_cpu < <(run "$tree/target/release")
  read -r now_rate now_cpu < <(run "$PWD/target/release")
  echo "round $r: $base $base_rate exec/s, $base_cpu us CPU per run; this checkout $now_rate exec/s, $now_cpu us CPU per run"
done
