#!/usr/bin/env bash
# One campaign on one node (--jobs 1, --jobs 2) and on two nodes joined on
# loopback (a hub with --listen and a leaf with --join, --jobs 1 each), in
# one run on this machine:
#   - exec/s on examples/bank (runs of one cost: the rate is the
#     explorer's, not the corpus's) for SECONDS;
#   - seconds to the first finding of raft_commit (the commit bug), for
#     SEEDS explorer seeds: wall time until the first node holding a
#     finding exits (--stop-on-finding; the time includes shrinking).
# Usage: bash bench/nodes.sh [SECONDS] [SEEDS]   (defaults: 10 3)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-10}
SEEDS=${2:-3}
cargo build --release -j2 -q -p dst-example-distributed -p dst-example-bank
BIN=target/release
WORK=$(mktemp -d /tmp/dst-nodes-bench.XXXXXX)
trap 'pkill -9 -P $$ 2>/dev/null || true; rm -rf "$WORK"' EXIT

# fuzz BINARY DIR ARGS...: a campaign keeping its files in DIR.
fuzz() {
  local bin=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  "$BIN/$bin" fuzz --quiet --json --corpus "$dir/corpus" --findings "$dir/findings" \
    --campaign "$dir/campaign.json" "$@"
}

# The executions a summary reports.
execs() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["executions"])' "$1"; }

# hub BINARY DIR ARGS...: starts a hub on a free loopback port in the
# background; sets PORT and HUB (its pid).
hub() {
  local bin=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  fuzz "$bin" "$dir" --listen 0 "$@" > "$dir/out.json" 2> "$dir/err.txt" &
  HUB=$!
  until grep -q "listening on" "$dir/err.txt" 2>/dev/null; do sleep 0.1; done
  PORT=$(grep -o "listening on 127.0.0.1:[0-9]*" "$dir/err.txt" | cut -d: -f2)
  # Let the hub bind its client to a core before the leaf picks one.
  sleep 1
}

echo "exec/s on bank, ${SECONDS_EACH}s each:"
for jobs in 1 2; do
  fuzz bank "$WORK/j$jobs" --jobs "$jobs" --time "${SECONDS_EACH}s" > "$WORK/j$jobs.json" || true
  echo "  one node, --jobs $jobs: $(( $(execs "$WORK/j$jobs.json") / SECONDS_EACH ))"
done
hub bank "$WORK/hub" --time "${SECONDS_EACH}s"
fuzz bank "$WORK/leaf" --join "127.0.0.1:$PORT" --time "${SECONDS_EACH}s" > "$WORK/leaf.json" 2> "$WORK/leaf.err" || true
wait "$HUB" || true
total=$(( $(execs "$WORK/hub/out.json") + $(execs "$WORK/leaf.json") ))
echo "  two nodes on loopback, --jobs 1 each: $(( total / SECONDS_EACH ))"

echo "seconds to the commit bug (raft_commit), seeds 1..$SEEDS:"
median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(" ".join("%.1f"%x for x in v), "-> median %.1f"%statistics.median(v))' "$@"; }
for jobs in 1 2; do
  times=()
  for seed in $(seq 1 "$SEEDS"); do
    start=$(date +%s.%N)
    fuzz raft_commit "$WORK/c$jobs-$seed" --jobs "$jobs" --seed "$seed" --stop-on-finding --time 300s > /dev/null || true
    times+=("$(python3 -c "print($(date +%s.%N) - $start)")")
  done
  echo "  one node, --jobs $jobs: $(median "${times[@]}")"
done
times=()
for seed in $(seq 1 "$SEEDS"); do
  start=$(date +%s.%N)
  hub raft_commit "$WORK/ch-$seed" --seed "$seed" --stop-on-finding --time 300s
  fuzz raft_commit "$WORK/cl-$seed" --join "127.0.0.1:$PORT" --seed "$seed" --stop-on-finding --time 300s > /dev/null 2>&1 &
  LEAF=$!
  # The first node to finish holds a finding (or ran out of time).
  wait -n "$HUB" "$LEAF" || true
  times+=("$(python3 -c "print($(date +%s.%N) - $start)")")
  kill -INT "$HUB" "$LEAF" 2>/dev/null || true
  wait "$HUB" "$LEAF" 2>/dev/null || true
done
echo "  two nodes on loopback, --jobs 1 each (from the hub's start): $(median "${times[@]}")"
