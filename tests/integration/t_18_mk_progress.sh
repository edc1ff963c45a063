#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The progress line of `sqk mkimage` (issue 31, point 4): once the source is counted (beside the
# build) it says N/TOTAL files, bytes done of the total and the time left; -progress draws it
# when stderr is not a terminal (as mksquashfs's -progress), -no-progress and -quiet never;
# -info prints each entry as mksquashfs -info does (compared with mksquashfs 4.7.5 on the same
# tree: the same file, directory and symlink lines, without mksquashfs's inode numbers) and turns
# the line off on a terminal unless -progress.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 script
peer_squashfs_tools

W=$(scratch mkprog)
SRC=$W/src
mkdir -p "$SRC/a/b" "$SRC/c"
# files of several blocks (read and compressed while the walk goes on: tails would wait for the
# end), enough for a few seconds of xz on one thread, so that lines are drawn
python3 - "$SRC" <<'EOF'
import os, random, sys
r = random.Random(18)
for i in range(12):
    words = " ".join(r.choice(["alpha", "beta", "gamma", "delta", str(i)]) for _ in range(60000))
    with open(os.path.join(sys.argv[1], "a" if i % 2 else "c", "f%03d" % i), "w") as f:
        f.write(words)
EOF
echo small >"$SRC/a/b/s"
ln "$SRC/a/b/s" "$SRC/c/hl"
ln -s b/s "$SRC/a/l"
NFILES=$(find "$SRC" -type f -links 1 | wc -l)
NFILES=$((NFILES + 1)) # the two names of s are one file
SLOW=(-comp xz -Xcompression-level 9 -processors 1)

# ---- 1. -progress with stderr redirected to a file: the totals and the time left ------------
run_capture prog "$SQK" mkimage "$SRC" "$W/p.sqsh" "${SLOW[@]}" -progress
[ "$RC" = 0 ] || { show_err; fail "-progress build exited $RC"; }
tr '\r' '\n' <"$ERR_FILE" >"$TMP/prog.lines"
grep -Eq "^[0-9]+/$NFILES files, [0-9.]+ of [0-9.]+ MiB \([0-9]+%\), .* MiB/s, ([0-9]+:)?[0-9]+:[0-9]{2} left" \
	"$TMP/prog.lines" || { head -n 5 "$TMP/prog.lines" >&2; fail "-progress: no line with the total ($NFILES files) and the time left"; }
grep -Eq "^$NFILES/$NFILES files, .*\(100%\).* 0:00 left" "$TMP/prog.lines" ||
	{ tail -n 3 "$TMP/prog.lines" >&2; fail "-progress: the last line is not 100%"; }
info "-progress off a terminal: $(grep -c left "$TMP/prog.lines") lines, the last: $(grep left "$TMP/prog.lines" | tail -n 1)"
grep -q '^image ' "$OUT_FILE" || fail "-progress: no summary"

# ---- 2. -no-progress and -quiet: no line, even with -progress before them ----------------------
run_capture noprog "$SQK" mkimage "$SRC" "$W/n.sqsh" "${SLOW[@]}" -progress -no-progress
[ "$RC" = 0 ] || { show_err; fail "-no-progress build exited $RC"; }
grep -q 'files, ' "$ERR_FILE" && fail "-no-progress drew the line: $(head -c 200 "$ERR_FILE")"
grep -q '^image ' "$OUT_FILE" || fail "-no-progress dropped the summary"
run_capture quiet "$SQK" mkimage "$SRC" "$W/q.sqsh" -progress -quiet
[ -s "$ERR_FILE" ] || [ -s "$OUT_FILE" ] && fail "-quiet -progress printed: $(head -c 200 "$ERR_FILE")"
cmp "$W/p.sqsh" "$W/n.sqsh" || fail "the progress line changed the image"
info "-no-progress, -quiet: no line; the same image"

# ---- 3. on a terminal: the line by default, off with -info unless -progress ------------------
tty_build() {
	rm -f "$W/tty.sqsh"
	script -qec "$(printf '%q ' "$SQK" mkimage "$SRC" "$W/tty.sqsh" "${SLOW[@]}" "$@")" /dev/null \
		>"$TMP/tty.out" 2>&1 || fail "build on a terminal ($*) failed: $(tail -n 3 "$TMP/tty.out")"
	tr '\r' '\n' <"$TMP/tty.out" >"$TMP/tty.lines"
}
tty_build
grep -q " left" "$TMP/tty.lines" || fail "no progress line with the time left on a terminal"
tty_build -info
grep -q " left" "$TMP/tty.lines" && fail "-info on a terminal: the progress line was drawn"
grep -q '^file /a/f001, uncompressed size' "$TMP/tty.lines" || fail "-info printed no file line"
tty_build -info -progress
grep -q " left" "$TMP/tty.lines" || fail "-info -progress: no progress line"
info "terminal: the line by default, not with -info, again with -info -progress"

# ---- 4. -info's lines against mksquashfs -info ------------------------------------------------
# normalised: mksquashfs's inode numbers and LINK/DUPLICATE marks off, sorted
"$MKSQUASHFS" "$SRC" "$W/m.sqsh" -noappend -no-progress -info >"$TMP/m.info" 2>&1 ||
	fail "mksquashfs -info failed: $(tail -n 3 "$TMP/m.info")"
"$SQK" mkimage "$SRC" "$W/s.sqsh" -info >"$TMP/s.info" 2>"$TMP/s.info.err" ||
	fail "sqk mkimage -info failed: $(cat "$TMP/s.info.err")"
norm() {
	grep -E '^(file|directory|symbolic link|character device|block device|fifo|unix domain socket) /' "$1" |
		sed -E 's/ inode 0x[0-9a-f]+( LINK)?$//; s/ bytes *(DUPLICATE|LINK)? *$/ bytes/' | sort
}
norm "$TMP/m.info" >"$TMP/m.norm"
norm "$TMP/s.info" >"$TMP/s.norm"
[ -s "$TMP/s.norm" ] || fail "-info printed nothing"
diff -u "$TMP/m.norm" "$TMP/s.norm" >&2 || fail "-info: lines differ from mksquashfs's (-), sqk (+)"
grep -q '^image ' "$TMP/s.info" || fail "-info dropped the summary"
info "-info: the same $(wc -l <"$TMP/s.norm") lines as mksquashfs -info"
exit 0
