#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The C sources keep to the 100 columns of .clang-format (tabs of 8, characters not bytes).
cd "$(dirname "$0")/../.." || exit 1
if git rev-parse --git-dir >/dev/null 2>&1; then
	files=$(git ls-files '*.c' '*.h' '*.cc')
else
	files=$(find . -name '*.[ch]' -o -name '*.cc' | grep -v '^./build')
fi
pass=0 failn=0
for f in $files; do
	long=$(LC_ALL=C.UTF-8 expand -t8 "$f" | LC_ALL=C.UTF-8 awk 'length > 100 {print FNR": "length" columns"}')
	if [ -n "$long" ]; then
		sed "s@^@$f:@" <<<"$long"
		failn=$((failn + 1))
	else
		pass=$((pass + 1))
	fi
done
echo "style: $pass passed, $failn failed"
[ "$failn" = 0 ]
