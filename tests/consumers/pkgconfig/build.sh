#!/usr/bin/env bash
# tests/consumers/pkgconfig/build.sh OUT_DIR — builds main.cpp against an installed ct with
# nothing but pkg-config and the compiler (PKG_CONFIG_PATH must reach ct.pc):
#   g++ -std=c++20 main.cpp $(pkg-config --cflags --libs ct)                          # libct.so
#   g++ -std=c++20 main.cpp $(pkg-config --cflags ct) \
#       $(pkg-config --static --libs ct | sed 's/-lct\b/-l:libct.a/')                 # libct.a
# The static link takes Requires.private (Highway) and Libs.private (threads) from ct.pc;
# -l:libct.a makes the linker take the archive where -lct would prefer the shared library.
# Writes OUT_DIR/softmax_check and OUT_DIR/softmax_check_static.
set -euo pipefail
out=$1
src=$(cd "$(dirname "$0")/.." && pwd)/main.cpp
cxx=${CXX:-g++}
mkdir -p "$out"
set -x
"$cxx" -std=c++20 -O2 -c "$src" -o "$out/main.o" $(pkg-config --cflags ct)
"$cxx" "$out/main.o" -o "$out/softmax_check" $(pkg-config --libs ct)
"$cxx" "$out/main.o" -o "$out/softmax_check_static" $(pkg-config --static --libs ct | sed 's/-lct\b/-l:libct.a/')
