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
source bench/kv-fork.sh
tree=$work/base
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$tree" "$base"
(cd "$tree" && cargo build -q --release -p dst-c -p dst-fuzz)

for r in $(seq "$rounds"); do
  read -r base_rate base_cpu < <(kv_run "$tree/target/release")
  read -r now_rate now_cpu < <(kv_run "$lib")
  echo "round $r: $base $base_rate exec/s, $base_cpu us CPU per run; this checkout $now_rate exec/s, $now_cpu us CPU per run"
done
