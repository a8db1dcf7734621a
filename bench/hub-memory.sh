#!/usr/bin/env bash
# Memory of a hub's and a leaf's broker over a campaign on examples/bank:
# LLMP keeps every message a broker has sent for late joiners, so the
# brokers grow. Prints each broker's resident set every 30 s.
#   bash bench/hub-memory.sh [SECONDS]   (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-300}
cargo build --release -j2 -q -p dst-example-bank
W=$(mktemp -d /tmp/dst-hub-memory.XXXXXX)
trap 'pkill -9 -P $$ 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p $W/hub $W/leaf
B=target/release/bank
$B fuzz --quiet --json --corpus $W/hub/corpus --findings $W/hub/findings --campaign $W/hub/c.json --listen 0 --time ${SECS}s > $W/hub/out.json 2> $W/hub/err.txt &
HUB=$!
until grep -q "listening on" $W/hub/err.txt 2>/dev/null; do sleep 0.1; done
PORT=$(grep -o "listening on 127.0.0.1:[0-9]*" $W/hub/err.txt | cut -d: -f2)
sleep 1
$B fuzz --quiet --json --corpus $W/leaf/corpus --findings $W/leaf/findings --campaign $W/leaf/c.json --join 127.0.0.1:$PORT --time $((SECS - 10))s > $W/leaf/out.json 2> $W/leaf/err.txt &
LEAF=$!
for t in $(seq 0 30 $((SECS - 10))); do
  echo "t=${t}s hub broker $(ps -o rss= -p $HUB) KiB, leaf broker $(ps -o rss= -p $LEAF) KiB"
  sleep 30
done
wait $HUB $LEAF || true
python3 -c "import json; [print(n, 'executions', json.load(open(f'$W/{n}/out.json'))['executions']) for n in ('hub','leaf')]"
