#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# squashkit zstd floor: how small and how fast any per-block zstd setting could make the bench
# corpus's data, against sqk's default (tests/bench/zstd_floor.c has the method).
#
#   make bench BENCH_ONLY=floor     # builds build/bench/zstd_floor, then runs this
#   sh tests/bench/bench_floor.sh
#
# Environment:
#   BENCH_CORPUS=DIR     the tree (default: /usr/include, /usr/share/doc and the Python standard
#                        library, the sources bench.sh copies, read in place)
#   BENCH_FLOOR_TAILS    sample every Nth 128 KiB chunk of the tails (default 10)
#   BENCH_FLOOR_BLOCKS   sample every Nth chunk of the whole blocks (default 5)
#   BENCH_FLOOR_SIZE     the oracle's least CPU is also reported at this many percent fewer
#                        bytes than the default (default 0.44: issue 19's 0.97x of mksquashfs
#                        4.7.5's image, from sqk's 0.974x on the bench corpus)
#   ZSTD_FLOOR           the tool (default build/bench/zstd_floor of this tree)
# About 6 minutes on 2 cores for the bench corpus (834 MiB). Exit status: the tool's (0; 1 when
# a file could not be read; 2 on a setup error).

set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tool=${ZSTD_FLOOR:-$top/build/bench/zstd_floor}

[ -x "$tool" ] || { echo "bench_floor: $tool is missing (make $top/build/bench/zstd_floor)" >&2; exit 2; }
if [ -n "${BENCH_CORPUS:-}" ]; then
	[ -d "$BENCH_CORPUS" ] || { echo "bench_floor: BENCH_CORPUS is not a directory: $BENCH_CORPUS" >&2; exit 2; }
	set -- "$BENCH_CORPUS"
else
	pystd=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])' 2>/dev/null)
	[ -n "$pystd" ] && [ -d "$pystd" ] || pystd=/usr/lib/python3.11
	set --
	for src in /usr/include /usr/share/doc "$pystd"; do
		[ -d "$src" ] && set -- "$@" "$src"
	done
	[ $# -gt 0 ] || { echo "bench_floor: no corpus source found" >&2; exit 2; }
fi
echo "floor: corpus: $*"
exec "$tool" -t "${BENCH_FLOOR_TAILS:-10}" -b "${BENCH_FLOOR_BLOCKS:-5}" \
	-s "${BENCH_FLOOR_SIZE:-0.44}" "$@"
