#!/bin/sh
# Builds the libFuzzer targets (DecodeFuzzer, ChainFuzzer, URLFuzzer) with
# AddressSanitizer, in release mode, into .build/fuzz. Prints the binary folder.
# The fuzzer runtime comes with the Swift toolchain's clang
# (lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}
# --sanitize=fuzzer instruments only the fuzzer targets themselves; the
# coverage flags put Halcyon and the C shim under libFuzzer's guidance too.
# (libvips and the codecs are system libraries: not instrumented.)
"$swift" build --package-path "$root/Fuzz" --scratch-path "$root/.build/fuzz" -c release \
    --sanitize=fuzzer --sanitize=address \
    -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xcc -fsanitize=fuzzer-no-link >&2
"$swift" build --package-path "$root/Fuzz" --scratch-path "$root/.build/fuzz" -c release \
    --sanitize=fuzzer --sanitize=address \
    -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xcc -fsanitize=fuzzer-no-link --show-bin-path
