#!/usr/bin/env bash
# A FuzzBench-style comparison of dst with libFuzzer and AFL++ on real
# OSS-Fuzz harnesses of real C libraries, built from Debian's source
# packages (apt-get source) or from a checkout given as SRC_<NAME>=PATH.
#
#   bash bench/harnesses/run.sh [SECONDS] [TRIALS] [HARNESS...]
#
# ENGINES="dst" (say) runs only those engines (default: libfuzzer afl dst);
# JOBS=1 runs one at a time (on core 0), FIRST_TRIAL=k starts at trial k
# (trial k's seed is k).
#
# Harnesses (the harness file each library ships, built as its OSS-Fuzz
# build.sh builds it, through CC, CXX, CFLAGS, CXXFLAGS and
# LIB_FUZZING_ENGINE): expat (expat/fuzz/xml_parse_fuzzer.c, UTF-8),
# libpcap (testprogs/fuzz/fuzz_both.c), libpng (contrib/oss-fuzz/
# libpng_read_fuzzer.cc), libxml2 (fuzz/xml.c), sqlite3 (test/ossfuzz.c).
# (json-c's own harness does not compile against its 0.16 sources, and
# Debian's re2 and tiff sources leave theirs out.)
# Each is built four ways from the same sources:
#   libfuzzer  clang -fsanitize=fuzzer-no-link, linked with -fsanitize=fuzzer
#   afl        afl-clang-fast with libAFLDriver.a, and a cmplog build
#              (AFL_LLVM_CMPLOG=1) passed with -c
#   dst        clang -fsanitize-coverage=inline-8bit-counters,trace-cmp,
#              linked with target/release/libdst_engine.a as
#              LIB_FUZZING_ENGINE: the harness fuzzes by itself
#   judge      clang -fprofile-instr-generate -fcoverage-mapping with
#              judge_main.c: replays each engine's final corpus; llvm-cov
#              counts its lines and branches (one judge for every engine)
# Every run starts from the same seeds and dictionary, pinned to one core;
# two runs go at once, one per core, where two cores are free. Results:
# $WORK/results.jsonl (one line per run), and a table (medians, and a
# Mann-Whitney U test of dst's coverage against the better other engine)
# from bench/harnesses/table.py.
#
# Needs (Debian): clang, llvm, afl++, dpkg-dev, cmake, autoconf, automake,
# libtool, tcl, flex, bison, zlib1g-dev, and deb-src lines in the apt sources for
# apt-get source. Work folder: $WORK (default /tmp/dst-harnesses).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/bench/harnesses"
secs=${1:-60}
trials=${2:-1}
shift 2 || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(expat libpcap libpng libxml2 sqlite3)
read -r -a engines <<< "${ENGINES:-libfuzzer afl dst}"
work=${WORK:-/tmp/dst-harnesses}
mkdir -p "$work/src" "$work/build" "$work/runs"
jobs=$(nproc)
[ "$jobs" -gt 2 ] && jobs=2
jobs=${JOBS:-$jobs}

for tool in clang clang++ afl-clang-fast afl-fuzz llvm-profdata llvm-cov dpkg-source cmake autoreconf tclsh flex bison flock; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (see the header for the packages)" >&2; exit 2; }
done

(cd "$root" && cargo build -q --release -p dst-engine)
engine_lib="$root/target/release/libdst_engine.a"

# The Debian source package of each harness's library.
package() {
  case $1 in
    expat) echo expat ;; libpcap) echo libpcap ;; libpng) echo libpng1.6 ;;
    libxml2) echo libxml2 ;; sqlite3) echo sqlite3 ;;
    *) echo "run.sh: unknown harness $1" >&2; exit 2 ;;
  esac
}

# The source tree of harness $1: SRC_<NAME> if given, else apt-get source.
source_of() {
  local var="SRC_${1//-/_}"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  local pkg; pkg=$(package "$1")
  local dir
  dir=$(find "$work/src" -maxdepth 1 -type d -name "${pkg}-[0-9]*" | head -n 1)
  if [ -z "$dir" ]; then
    (cd "$work/src" && apt-get source -qq "$pkg" >/dev/null) || {
      echo "run.sh: apt-get source $pkg failed (add deb-src lines to the apt sources)" >&2; exit 2; }
    dir=$(find "$work/src" -maxdepth 1 -type d -name "${pkg}-[0-9]*" | head -n 1)
  fi
  echo "$dir"
}

# Builds harness $1 in $2 (a copy of its source tree) with the OSS-Fuzz
# variables set; the fuzzer lands in $OUT/fuzzer.
build_harness() {
  local name=$1 tree=$2
  cd "$tree"
  case $name in
    expat)
      cd expat
      # Debian's later security patches test `#if XML_DTD == 1`, as
      # autotools' config.h defines it; CMake's template defines it empty.
      sed -i 's/^#cmakedefine XML_DTD$/#cmakedefine XML_DTD 1/' expat_config.h.cmake
      cmake -S . -B build -DEXPAT_SHARED_LIBS=OFF -DEXPAT_BUILD_TESTS=OFF \
        -DEXPAT_BUILD_TOOLS=OFF -DEXPAT_BUILD_EXAMPLES=OFF -DEXPAT_BUILD_DOCS=OFF \
        -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" >/dev/null
      make -s -C build -j"$jobs" expat >/dev/null
      $CC $CFLAGS -DENCODING_FOR_FUZZING=UTF-8 -Ilib -Ibuild -c fuzz/xml_parse_fuzzer.c -o fuzzer.o
      $CXX $CXXFLAGS fuzzer.o -o "$OUT/fuzzer" $LIB_FUZZING_ENGINE build/libexpat.a
      ;;
    libpcap)
      cmake -S . -B build -DDISABLE_DBUS=1 -DBUILD_SHARED_LIBS=OFF \
        -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" >/dev/null
      make -s -C build -j"$jobs" pcap_static >/dev/null
      $CC $CFLAGS -I. -c testprogs/fuzz/fuzz_both.c -o fuzzer.o
      $CXX $CXXFLAGS fuzzer.o -o "$OUT/fuzzer" build/libpcap.a $LIB_FUZZING_ENGINE
      ;;
    libpng)
      # contrib/oss-fuzz/build.sh's steps, with this tree's paths.
      sed -e "s/option STDIO/option STDIO disabled/" \
          -e "s/option WARNING /option WARNING disabled/" \
          -e "s/option WRITE enables WRITE_INT_FUNCTIONS/option WRITE disabled/" \
          scripts/pnglibconf.dfa > scripts/pnglibconf.dfa.temp
      mv scripts/pnglibconf.dfa.temp scripts/pnglibconf.dfa
      autoreconf -f -i >/dev/null 2>&1
      ./configure -q --with-libpng-prefix=OSS_FUZZ_ --disable-shared >/dev/null
      make -s -j"$jobs" libpng16.la >/dev/null 2>&1
      $CXX $CXXFLAGS -std=c++11 -I. contrib/oss-fuzz/libpng_read_fuzzer.cc \
        -o "$OUT/fuzzer" $LIB_FUZZING_ENGINE .libs/libpng16.a -lz
      cp contrib/oss-fuzz/png.dict "$OUT/fuzzer.dict"
      ;;
    libxml2)
      # Debian's patches leave Makefile.am newer than Makefile.in: make
      # would rerun an automake of another version.
      autoreconf -f -i >/dev/null 2>&1
      ./configure -q --disable-shared --without-debug --without-ftp --without-http \
        --without-legacy --without-python --without-zlib --without-lzma --without-threads >/dev/null
      make -s -j"$jobs" libxml2.la >/dev/null 2>&1
      $CC $CFLAGS -I include -c fuzz/fuzz.c -o fuzz.o
      $CC $CFLAGS -I include -c fuzz/xml.c -o xml.o
      $CXX $CXXFLAGS xml.o fuzz.o -o "$OUT/fuzzer" $LIB_FUZZING_ENGINE .libs/libxml2.a -lm
      cp fuzz/xml.dict "$OUT/fuzzer.dict"
      ;;
    sqlite3)
      mkdir -p bld && cd bld
      ../configure -q --disable-shared >/dev/null
      make -s sqlite3.c >/dev/null 2>&1
      local defs="-DSQLITE_MAX_LENGTH=128000000 -DSQLITE_MAX_SQL_LENGTH=128000000 \
        -DSQLITE_MAX_MEMORY=25000000 -DSQLITE_PRINTF_PRECISION_LIMIT=1048576 \
        -DSQLITE_DEBUG=1 -DSQLITE_MAX_PAGE_COUNT=16384"
      $CC $CFLAGS $defs -I. -c ../test/ossfuzz.c -o ossfuzz.o
      $CC $CFLAGS $defs -I. -c sqlite3.c -o sqlite3.o
      $CXX $CXXFLAGS ossfuzz.o sqlite3.o -o "$OUT/fuzzer" $LIB_FUZZING_ENGINE -lpthread -ldl -lm
      ;;
  esac
}

# A seed per harness (the same for every engine).
seed() {
  case $1 in
    expat|libxml2) printf '<?xml version="1.0"?>\n<a b="c">d<e/></a>\n' ;;
    libpcap) printf 'dst/' ;;
    libpng) cat "$2/pngtest.png" ;;
    sqlite3) printf 'CREATE TABLE t(a, b); INSERT INTO t VALUES(1, 2); SELECT a FROM t;' ;;
  esac
}

build_all() { # harness
  local name=$1 src; src=$(source_of "$name")
  local out="$work/build/$name"
  mkdir -p "$out/seeds"
  seed "$name" "$src" > "$out/seeds/seed"
  local flavour
  for flavour in libfuzzer afl afl-cmplog dst judge; do
    [ -x "$out/$flavour" ] && continue
    local tree="$work/build/tree-$name-$flavour"
    rm -rf "$tree"; cp -a "$src" "$tree"
    local cc=clang cxx=clang++ flags="-O1 -g" engine extra=""
    case $flavour in
      libfuzzer) flags="$flags -fsanitize=fuzzer-no-link"; engine="-fsanitize=fuzzer" ;;
      afl|afl-cmplog) cc=afl-clang-fast; cxx=afl-clang-fast++; engine=/usr/lib/afl/libAFLDriver.a ;;
      dst) flags="$flags -fsanitize-coverage=inline-8bit-counters,trace-cmp"; engine="$engine_lib" ;;
      judge)
        flags="$flags -fprofile-instr-generate -fcoverage-mapping"
        clang -O1 -c "$here/judge_main.c" -o "$out/judge_main.o"
        engine="$out/judge_main.o" ;;
    esac
    [ "$flavour" = afl-cmplog ] && extra=1
    mkdir -p "$tree/out"
    (
      export CC=$cc CXX=$cxx CFLAGS="$flags" CXXFLAGS="$flags" LIB_FUZZING_ENGINE=$engine OUT="$tree/out"
      [ -n "$extra" ] && export AFL_LLVM_CMPLOG=1
      export AFL_QUIET=1
      build_harness "$name" "$tree"
    ) > "$out/build-$flavour.log" 2>&1 || true
    # (set -e does not stop a subshell whose status is tested: the fuzzer
    # itself is the check.)
    [ -x "$tree/out/fuzzer" ] || { echo "run.sh: building $name for $flavour failed: $out/build-$flavour.log" >&2; exit 3; }
    cp "$tree/out/fuzzer" "$out/$flavour"
    [ -f "$tree/out/fuzzer.dict" ] && cp "$tree/out/fuzzer.dict" "$out/dict"
    rm -rf "$tree"
  done
}

# One run: engine $2 on harness $1, trial $3, on core $4. Appends a line
# to results.jsonl: exec/s, and the judge's lines and branches.
one_run() {
  local name=$1 engine=$2 trial=$3 core=$4
  local out="$work/build/$name" dir="$work/runs/$name-$engine-$trial"
  rm -rf "$dir"; mkdir -p "$dir/corpus"
  local dict=() rate=0 started ended
  started=$(date +%s.%N)
  case $engine in
    libfuzzer)
      [ -f "$out/dict" ] && dict=("-dict=$out/dict")
      (cd "$dir" && timeout $((secs + 60)) taskset -c "$core" "$out/libfuzzer" -seed="$trial" \
        -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
        -artifact_prefix=./ "${dict[@]}" corpus "$out/seeds" > log 2>&1) || true
      rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -n 1)
      ;;
    afl)
      [ -f "$out/dict" ] && dict=(-x "$out/dict")
      (cd "$dir" && AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
        timeout $((secs + 60)) taskset -c "$core" afl-fuzz -s "$trial" -V "$secs" -t 25000 -m none \
        -i "$out/seeds" -o afl -c "$out/afl-cmplog" "${dict[@]}" -- "$out/afl" > log 2>&1) || true
      rate=$(python3 - "$dir/afl/default/fuzzer_stats" <<'EOF'
import sys
stats = {k.strip(): v.strip() for k, v in (l.split(':', 1) for l in open(sys.argv[1]) if ':' in l)}
print(int(int(stats['execs_done']) / max(int(stats['run_time']), 1)))
EOF
)
      cp -r "$dir/afl/default/queue/." "$dir/corpus/" 2>/dev/null || true
      rm -rf "$dir/corpus/.state"
      ;;
    dst)
      [ -f "$out/dict" ] && dict=("-dict=$out/dict")
      (cd "$dir" && DST_NO_AFFINITY=1 timeout $((secs + 60)) taskset -c "$core" "$out/dst" -seed="$trial" \
        -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
        -artifact_prefix=./ "${dict[@]}" corpus "$out/seeds" > log 2>&1) || true
      rate=$(sed -n 's/^dst-fuzz: .*(\([0-9]*\)\/s).*/\1/p' "$dir/log" | tail -n 1)
      ;;
  esac
  ended=$(date +%s.%N)
  cp "$out/seeds/"* "$dir/corpus/" 2>/dev/null || true
  # The judge: every file of the final corpus, one child each.
  rm -f "$dir"/*.profraw
  find "$dir/corpus" -maxdepth 1 -type f -print0 |
    (cd "$dir" && LLVM_PROFILE_FILE="$dir/judge-%m.profraw" xargs -0 -r taskset -c "$core" "$out/judge" >/dev/null 2>&1) || true
  llvm-profdata merge -sparse "$dir"/*.profraw -o "$dir/judge.profdata"
  llvm-cov export -summary-only "$out/judge" -instr-profile="$dir/judge.profdata" > "$dir/cov.json"
  local crash=""
  crash=$(find "$dir" -maxdepth 1 -name 'crash-*' ! -name '*.dst' | head -n 1)
  [ -z "$crash" ] && [ -d "$dir/afl/default/crashes" ] && crash=$(find "$dir/afl/default/crashes" -name 'id:*' | head -n 1)
  python3 - "$dir/cov.json" "$name" "$engine" "$trial" "${rate:-0}" "$started" "$ended" "$(find "$dir/corpus" -type f | wc -l)" "${crash:+yes}" >> "$work/results.jsonl" <<'EOF'
import json, sys
cov, name, engine, trial, rate, started, ended, corpus, crash = sys.argv[1:]
totals = json.load(open(cov))['data'][0]['totals']
print(json.dumps({'harness': name, 'engine': engine, 'trial': int(trial),
    'exec_per_sec': float(rate or 0), 'lines': totals['lines']['covered'],
    'branches': totals['branches']['covered'], 'corpus': int(corpus),
    'seconds': round(float(ended) - float(started), 1), 'crash': crash == 'yes'}))
EOF
  echo "run.sh: $name $engine trial $trial on core $core: $(tail -n 1 "$work/results.jsonl")"
}

for name in "${harnesses[@]}"; do
  build_all "$name"
done

# The runs, two at a time (one per core): worker k takes every jobs-th run.
# Never two runs of one harness at once: a harness may use fixed paths
# (libpcap's fuzz_both writes every input to /tmp/fuzz.pcap), so each run
# holds its harness's lock; runs are ordered engine by engine, so the two
# workers seldom want the same harness.
runs=()
for trial in $(seq "${FIRST_TRIAL:-1}" "$trials"); do
  for engine in "${engines[@]}"; do
    for name in "${harnesses[@]}"; do runs+=("$name $engine $trial"); done
  done
done
worker() {
  local k=$1 i
  for ((i = k; i < ${#runs[@]}; i += jobs)); do
    local job=(${runs[$i]})
    (
      flock 9
      one_run "${job[@]}" "$k"
    ) 9> "$work/lock-${job[0]}"
  done
}
: > "$work/results.jsonl"
pids=()
for ((k = 0; k < jobs; k++)); do worker "$k" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid"; done
python3 "$here/table.py" "$work/results.jsonl"
