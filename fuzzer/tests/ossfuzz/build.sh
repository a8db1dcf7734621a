#!/bin/bash -eu
# An OSS-Fuzz build script, as a project writes one: it knows nothing of
# dst. OSS-Fuzz (or the test) sets SRC, WORK, OUT, CC, CXX, CFLAGS,
# CXXFLAGS and LIB_FUZZING_ENGINE.
$CC $CFLAGS -c "$SRC/tlv.c" -o "$WORK/tlv.o"
ar rcs "$WORK/libtlv.a" "$WORK/tlv.o"
$CXX $CXXFLAGS -I"$SRC" "$SRC/tlv_fuzzer.cc" -o "$OUT/tlv_fuzzer" $LIB_FUZZING_ENGINE "$WORK/libtlv.a"
