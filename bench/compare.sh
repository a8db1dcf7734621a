#!/usr/bin/env bash
# Throughput of dst side by side with bare LibAFL and libFuzzer, in one run,
# on the same branchy 16-byte closure. Prints exec/s and ratios.
#   bash bench/compare.sh [EXECUTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== bare LibAFL and dst in-process (uninstrumented), cargo bench"
cargo bench -q -p dst-fuzz --bench throughput 2>/dev/null | tee "$work/bench.txt"

echo "== dst through cargo dst-fuzz run (edge-instrumented target)"
# Each measurement starts from no corpus and no campaign.
rm -rf fuzz/corpus/throughput fuzz/campaigns/throughput*
cargo run -q --release -p dst-fuzz -- run throughput --runs "$runs" --json --quiet \
  > "$work/dst.json" 2> "$work/dst.err" || true
dst=$(python3 -c "import json;print(int(json.load(open('$work/dst.json'))['exec_per_sec']))")
echo "dst (cargo dst-fuzz run)            $dst exec/s"

echo "== libFuzzer (libfuzzer-sys, sanitizer coverage as cargo-fuzz -s none)"
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3"
flags="$flags -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
flags="$flags -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares"
# --target keeps the flags off build scripts, as cargo-fuzz does.
(cd bench/libfuzzer && RUSTFLAGS="$flags --cfg fuzzing" \
  cargo build -q --release --target x86_64-unknown-linux-gnu --bin branchy)
mkdir -p "$work/corpus"
lf=$(python3 - "$runs" "$work" <<'PY'
import subprocess, sys, time
runs, work = sys.argv[1], sys.argv[2]
start = time.monotonic()
subprocess.run(["bench/libfuzzer/target/x86_64-unknown-linux-gnu/release/branchy",
                f"-runs={runs}", "-seed=1", f"{work}/corpus"],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
print(int(int(runs) / (time.monotonic() - start)))
PY
)
echo "libFuzzer                           $lf exec/s"
python3 - "$dst" "$lf" <<'PY'
import sys
dst, lf = int(sys.argv[1]), int(sys.argv[2])
print(f"dst / libFuzzer = {dst / lf:.2f}")
PY
