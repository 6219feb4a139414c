#!/bin/sh
# Builds PNGLoaderFuzzer (Fuzz/png/png_oracle.c with the shrinking PNG loader's C files, AddressSanitizer and
# libFuzzer from the Swift toolchain's clang; a few seconds) into .build/png-fuzz, then runs it for SECONDS
# (default 90) on Fuzz/corpus/png plus what earlier runs found (.build/png-fuzz/corpus). A disagreement with
# libvips or a sanitizer report fails the run (exit 1) and leaves the input in .build/png-fuzz/artifacts.
#   Fuzz/png/run.sh [SECONDS]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-90}
out="$root/.build/png-fuzz"
clang=${CLANG:-$(dirname "$(readlink -f "$(command -v swift)")")/clang}
mkdir -p "$out/corpus" "$out/artifacts"
src="$root/Sources/CHalcyonVips"
# shellcheck disable=SC2046
"$clang" -O1 -g -fsanitize=fuzzer,address -fno-omit-frame-pointer -I"$src/include" -I"$src" \
    $(pkg-config --cflags vips) "$root/Fuzz/png/png_oracle.c" "$src/halcyon_png.c" "$src/halcyon_png_inflate.c" \
    "$src/halcyon_cancel.c" $(pkg-config --libs vips) -lisal -o "$out/PNGLoaderFuzzer" 2>"$out/build.log" ||
    { cat "$out/build.log" >&2; exit 1; }
# libvips' and GLib's allocations that live for the process are not leaks of the loader.
VIPS_WARNING=0 ASAN_OPTIONS=detect_leaks=0 "$out/PNGLoaderFuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=20 -max_len=65536 -dict="$root/Fuzz/image.dict" -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/" "$out/corpus" "$root/Fuzz/corpus/png"
