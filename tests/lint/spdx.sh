#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Every source, script, build and manual file names its licence in an SPDX line near its top,
# and LICENSE holds the BSD-2-Clause text.
cd "$(dirname "$0")/../.." || exit 1
pass=0 failn=0
grep -q "BSD 2-Clause License" LICENSE 2>/dev/null || { echo "LICENSE: not the BSD-2-Clause text"; failn=$((failn + 1)); }
if git rev-parse --git-dir >/dev/null 2>&1; then
	files=$(git ls-files)
else
	files=$(find . -type f ! -path './build*' ! -path './.git/*' | sed 's@^\./@@')
fi
while IFS= read -r f; do
	case $f in
	*.c | *.h | *.sh | *.py | *.mk | Makefile | *.map | *.in | *.1 | *.8 | .ci/run | cli/completion/*) ;;
	*) continue ;;
	esac
	if head -n 3 "$f" | grep -q "SPDX-License-Identifier: BSD-2-Clause"; then
		pass=$((pass + 1))
	else
		echo "$f: no 'SPDX-License-Identifier: BSD-2-Clause' line in its first three lines"
		failn=$((failn + 1))
	fi
done <<<"$files"
echo "spdx: $pass passed, $failn failed"
[ "$failn" = 0 ]
