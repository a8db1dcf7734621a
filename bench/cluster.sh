#!/usr/bin/env bash
# A two-node cluster on dst's emulator against qemu-riscv64 running the
# same programs: examples/cluster/counter's Go server and a client making
# ADDITIONS requests (20 by default) and reading the value back, each pinned
# to one core. dst explores the cluster from its snapshot after setup
# (`run --runs RUNS --seed 1`: runs per second of exploration, faults
# included); qemu-riscv64 starts the server once and runs the client RUNS
# times over the host's loopback (no faults, no exploration: the floor a
# user would otherwise reach for; the client's check of the value fails
# after the first run, its work is the same).
# Usage: bench/cluster.sh [RUNS] [ADDITIONS] [CORE]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
additions=${2:-20}
core=${3:-1}
work=$(mktemp -d /tmp/dst-bench-cluster.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
for p in server client; do
  CGO_ENABLED=0 GOOS=linux GOARCH=riscv64 GO111MODULE=off \
    go build -o "$work/$p" "examples/cluster/counter/$p.go"
done
cat > "$work/counter.toml" <<TOML
[[node]]
name = "server"
program = "server"
faults = false

[[node]]
name = "client"
program = "client"
args = ["http://server:8080", "$additions"]
workload = true
faults = false
TOML
cargo build -q --release -p dst-fuzz
dst=$PWD/target/release/cargo-dst-fuzz
(cd "$work" && taskset -c "$core" "$dst" dst-fuzz run --cluster counter.toml --runs "$runs" --seed 1 2>&1 | grep "executions in")
taskset -c "$core" qemu-riscv64 "$work/server" 127.0.0.1:18080 &
sleep 1
start=$(date +%s.%N)
for _ in $(seq "$runs"); do
  taskset -c "$core" qemu-riscv64 "$work/client" http://127.0.0.1:18080 "$additions" > /dev/null 2>&1 || true
done
end=$(date +%s.%N)
echo "qemu-riscv64: $runs client runs in $(echo "$end - $start" | bc) s"
