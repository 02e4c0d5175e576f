#!/bin/sh
# Runs the PTX parser fuzzer for a bounded time over the nvcc-built corpus.
# Exit 77 (skipped) when the fuzzer could not be built here.
fuzzer="$1"; seeds="$2"; seconds="${3:-10}"
if [ ! -x "$fuzzer" ]; then
  echo "ptx parser fuzzer not built (needs clang++ and libclang-rt-14-dev): skipped"
  exit 77
fi
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 "$work" "$seeds"
