#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Progress lines (issue 17, point 9) and what a failed extract leaves (point 11):
#  1. off a terminal, sqk extract / verify / tar / cat print nothing extra: stderr is empty and
#     stdout is what it was (the data, the archive, verify's one summary line)
#  2. on a pseudo-terminal (script(1)), with the work slowed down so that it lasts seconds (tar
#     and cat into a pipe read at about 8 MiB/s; extract and verify of a URL through
#     faultproxy.py delaying every request): a progress line "CMD: [D/N files, ]X/Y (P%), R/s, M:SS left" with a
#     non-zero rate, erased ("\r", blanks, "\r") before the one-line summary "sqk CMD: ..."
#     (verify: its own summary on stdout); a fast extract on a terminal still ends with the
#     summary; --no-progress prints nothing; cat onto the terminal itself draws no line
#  3. a failed extract (a file over RLIMIT_FSIZE: EFBIG, deterministic with -j 1) leaves every
#     directory made with its mode and mtime from the image (not 0700) and says how many of the
#     files it extracted and how many partial files it removed ("extracted 3 of 6 files into
#     DEST before the error (1 partial file removed); DEST is incomplete"), the files before
#     the failure whole, the partial one removed
#  4. extract of a PATH that is not in the image (alone or beside one that is) creates
#     nothing, not even DEST, exits 1 and names the path
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd script python3 tar
export XDG_CACHE_HOME=$TMP/xdg-cache
W=$(scratch prog)

# ---- the images -----------------------------------------------------------------------------

# big: 8 files of 2 MiB (random: stored raw) and a few directories with their own modes
mkdir -p "$W/big/data" "$W/big/d/x" "$W/big/d/ro"
for i in 1 2 3 4 5 6 7 8; do
	head -c $((2 << 20)) /dev/urandom >"$W/big/data/f$i"
done
echo small >"$W/big/d/x/s"
chmod 0555 "$W/big/d/ro"
sqk_build "$W/big" "$W/big.sqsh" -q
BIG=$W/big.sqsh

# modes: files in walk order a/f1..f3, then m/big (2 MB), then z/f1, z/f2; every directory
# with a mode of its own, and the root too
S=$W/modes
mkdir -p "$S/a" "$S/b/ro" "$S/m" "$S/z"
for i in 1 2 3; do echo "a$i" >"$S/a/f$i"; done
head -c 2000000 /dev/urandom >"$S/m/big"
for i in 1 2; do echo "z$i" >"$S/z/f$i"; done
chmod 0750 "$S"
chmod 0705 "$S/a"
chmod 0711 "$S/b"
chmod 0555 "$S/b/ro"
chmod 0700 "$S/m"
chmod 0750 "$S/z"
touch -d '2001-02-03 04:05:06' "$S/a" "$S/b/ro" "$S/z"
sqk_build "$S" "$W/modes.sqsh" -q
MODES=$W/modes.sqsh

# slow_read: stdin to /dev/null at about 8 MiB/s (256 KiB every 30 ms)
SLOW="python3 -c 'import sys, time
while sys.stdin.buffer.read(262144):
    time.sleep(0.03)'"

# on_tty NAME CMD: runs the shell command CMD on a pseudo-terminal (stdin, stdout and stderr
# of CMD are the terminal unless CMD redirects them); the transcript in $TMP/NAME.tty and, one
# line per "\r" or "\n", in $TMP/NAME.lines; its exit status in RC.
on_tty() {
	local name=$1
	RC=0
	timeout 120 script -qec "$2" /dev/null </dev/null >"$TMP/$name.tty" 2>"$TMP/$name.tty.err" ||
		RC=$?
	[ "$RC" != 124 ] || fail "$name: '$2' did not finish within 120 s"
	tr '\r' '\n' <"$TMP/$name.tty" | grep -v '^ *$' >"$TMP/$name.lines" || true
}

# tty_show NAME: the transcript, for a failure message
tty_show() {
	echo "  transcript of $1 (\\r as newlines):" >&2
	sed 's/^/    | /' "$TMP/$1.lines" | tail -n 20 >&2
}

SIZE='[0-9.]+ (B|KiB|MiB|GiB)'
# progress_seen NAME CMD FILES: the transcript has a progress line of CMD with done/total (of
# files too when FILES=files), a non-zero rate and a time left; the summary follows an erase.
progress_seen() {
	local name=$1 cmd=$2 files=${3:-} re
	re="^$cmd: "
	[ "$files" = files ] && re="$re[0-9]+/[0-9]+ files, "
	re="$re$SIZE/$SIZE \\([0-9]+%\\), [0-9.]+ (B|KiB|MiB|GiB)/s, [0-9]+:[0-9][0-9] left\$"
	grep -Eq "$re" "$TMP/$name.lines" || { tty_show "$name"; fail "$name: no progress line"; }
	grep -E "$re" "$TMP/$name.lines" | grep -Evq ', 0 B/s, ' ||
		{ tty_show "$name"; fail "$name: the progress line never shows a non-zero rate"; }
	# erased before what follows it: "\r", blanks as wide as the line, "\r"
	python3 - "$TMP/$name.tty" "$cmd" <<'EOF' || { tty_show "$name"; fail "$name: progress line not erased"; }
import re, sys
raw = open(sys.argv[1], 'rb').read().decode('utf-8', 'replace')
cmd = sys.argv[2]
want = 'verify: ' if cmd == 'verify' else 'sqk %s: ' % cmd
m = list(re.finditer(r'\r(%s: [^\r\n]*)\r( +)\r' % re.escape(cmd), raw))
if not m:
    sys.exit('no erase of a progress line')
last = m[-1]
if len(last.group(2)) < len(last.group(1)):
    sys.exit('erased with %d blanks, the line was %d wide' % (len(last.group(2)), len(last.group(1))))
if not raw[last.end():].startswith(want):
    sys.exit('after the erase: %r' % raw[last.end():last.end() + 60])
if re.search(r'\r%s: ' % re.escape(cmd), raw[last.end():]):
    sys.exit('a progress line drawn after the end')
EOF
}

# ---- 1. off a terminal: nothing extra ------------------------------------------------------

run_capture x_file "$SQK" extract "$BIG" "$W/x.file"
[ "$RC" = 0 ] || { show_err; fail "extract exited $RC"; }
[ ! -s "$ERR_FILE" ] && [ ! -s "$OUT_FILE" ] ||
	{ show_err; fail "extract off a terminal printed something"; }
tree_equal "extract off a terminal" "$W/big" "$W/x.file"
run_capture v_file "$SQK" verify "$BIG"
[ "$RC" = 0 ] || { show_err; fail "verify exited $RC"; }
[ ! -s "$ERR_FILE" ] || { show_err; fail "verify off a terminal printed on stderr"; }
[ "$(wc -l <"$OUT_FILE")" = 1 ] && grep -q "^verify: $BIG: clean" "$OUT_FILE" ||
	fail "verify off a terminal: stdout is not its one summary line: $(head -c 600 "$OUT_FILE")"
run_capture t_file "$SQK" tar "$BIG"
[ "$RC" = 0 ] || { show_err; fail "tar exited $RC"; }
[ ! -s "$ERR_FILE" ] || { show_err; fail "tar off a terminal printed on stderr"; }
mkdir "$W/t.file" && tar -xf "$OUT_FILE" -C "$W/t.file" || fail "tar -x of sqk tar's output failed"
tree_equal "tar off a terminal" "$W/big" "$W/t.file"
run_capture c_file "$SQK" cat "$BIG" data/f1 data/f2
[ "$RC" = 0 ] || { show_err; fail "cat exited $RC"; }
[ ! -s "$ERR_FILE" ] || { show_err; fail "cat off a terminal printed on stderr"; }
cat "$W/big/data/f1" "$W/big/data/f2" | cmp -s - "$OUT_FILE" || fail "cat: wrong bytes"
info "off a terminal: extract, verify, tar, cat print nothing extra"

# ---- 2. on a terminal ------------------------------------------------------------------------

on_tty tar_tty "'$SQK' tar '$BIG' | $SLOW"
[ "$RC" = 0 ] || { tty_show tar_tty; fail "tar on a terminal exited $RC"; }
progress_seen tar_tty tar files
grep -Eq "^sqk tar: 9 files \\(16\\.0 MiB\\) archived to stdout in [0-9.]+ s, $SIZE/s\$" \
	"$TMP/tar_tty.lines" || { tty_show tar_tty; fail "tar on a terminal: no summary line"; }

on_tty cat_tty "'$SQK' cat '$BIG' data/f1 data/f2 data/f3 data/f4 data/f5 data/f6 data/f7 data/f8 | $SLOW"
[ "$RC" = 0 ] || { tty_show cat_tty; fail "cat on a terminal exited $RC"; }
progress_seen cat_tty cat files
grep -Eq "^sqk cat: 8 files \\(16\\.0 MiB\\) written in [0-9.]+ s, $SIZE/s\$" \
	"$TMP/cat_tty.lines" || { tty_show cat_tty; fail "cat on a terminal: no summary line"; }
# a short cat (under a second) draws nothing; nor does a cat onto the terminal itself
on_tty cat_short "'$SQK' cat '$BIG' d/x/s >/dev/null"
[ "$RC" = 0 ] && [ ! -s "$TMP/cat_short.tty" ] ||
	{ tty_show cat_short; fail "a short cat printed on the terminal (exit $RC)"; }
on_tty cat_self "'$SQK' cat '$BIG' d/x/s"
[ "$RC" = 0 ] && [ "$(cat "$TMP/cat_self.tty")" = "small"$'\r' ] ||
	{ tty_show cat_self; fail "cat onto the terminal: not just the file (exit $RC)"; }

# a fast local extract: no line need be drawn, the summary comes all the same
on_tty x_fast "'$SQK' extract '$BIG' '$W/x.fast'"
[ "$RC" = 0 ] || { tty_show x_fast; fail "extract on a terminal exited $RC"; }
grep -Eq "^sqk extract: 9 files \\(16\\.0 MiB\\), 4 directories, 0 other entries extracted into $W/x.fast in [0-9.]+ s, $SIZE/s\$" \
	"$TMP/x_fast.lines" || { tty_show x_fast; fail "extract on a terminal: no summary line"; }
tree_equal "extract on a terminal" "$W/big" "$W/x.fast"
# --no-progress: nothing
on_tty x_quiet "'$SQK' extract --no-progress '$BIG' '$W/x.quiet' && '$SQK' tar --no-progress '$BIG' | cat >/dev/null && '$SQK' verify --no-progress '$BIG' >/dev/null"
[ "$RC" = 0 ] && [ ! -s "$TMP/x_quiet.tty" ] ||
	{ tty_show x_quiet; fail "--no-progress printed on the terminal (exit $RC)"; }
info "on a terminal: tar and cat progress lines and summaries; --no-progress quiet"

# extract and verify of a URL whose every request waits (faultproxy.py delay=MS): seconds of
# work, one file (extract -j 1) or one span of the checker (verify -j 1) at a time
if have_feature remote; then
	mkdir -p "$W/www"
	cp "$BIG" "$W/www/big.sqsh"
	http_serve "$W/www"
	proxy_start
	on_tty x_tty "'$SQK' extract -j 1 --cache-dir '$TMP/c1' '$PROXY_URL/_f/delay=100/big.sqsh' '$W/x.tty'"
	[ "$RC" = 0 ] || { tty_show x_tty; fail "extract of the URL on a terminal exited $RC"; }
	progress_seen x_tty extract files
	grep -Eq "^sqk extract: 9 files \\(16\\.0 MiB\\), 4 directories, 0 other entries extracted into $W/x.tty in [0-9.]+ s, $SIZE/s\$" \
		"$TMP/x_tty.lines" || { tty_show x_tty; fail "extract of the URL: no summary line"; }
	tree_equal "extract of the URL on a terminal" "$W/big" "$W/x.tty"
	on_tty v_tty "'$SQK' verify -j 1 '$PROXY_URL/_f/delay=600/big.sqsh'"
	[ "$RC" = 0 ] || { tty_show v_tty; fail "verify of the URL on a terminal exited $RC"; }
	progress_seen v_tty verify
	grep -q "^verify: .*big.sqsh: clean" "$TMP/v_tty.lines" ||
		{ tty_show v_tty; fail "verify of the URL: no summary line"; }
	info "on a terminal: extract and verify of a slow URL show progress, erased before the summary"
else
	info "a slow URL not run: built with HAVE_REMOTE=0"
fi

# ---- 3. a failed extract -------------------------------------------------------------------

# m/big is over the file size limit: the first three files are written, then EFBIG
run_capture x_fail bash -c "trap '' XFSZ; ulimit -f 1024; exec '$SQK' extract -j 1 '$MODES' '$W/x.fail'"
[ "$RC" = 1 ] || { show_err; fail "the failed extract exited $RC"; }
grep -q "/m/big: write failed: File too large" "$ERR_FILE" ||
	{ show_err; fail "the failed extract does not name the file"; }
grep -q "/m/big: write failed: File too large (in $W/x.fail): removed the partial file $W/x.fail/m/big\$" \
	"$ERR_FILE" || { show_err; fail "the failed extract does not say the partial file was removed"; }
[ ! -e "$W/x.fail/m/big" ] || fail "the failed extract left a partial m/big"
grep -qx "sqk extract: $MODES: extracted 3 of 6 files into $W/x.fail before the error (1 partial file removed); $W/x.fail is incomplete" \
	"$ERR_FILE" || { show_err; fail "the failed extract does not say what it left"; }
for d in . a b b/ro m z; do
	want=$(stat -c '%a %Y' "$S/$d")
	got=$(stat -c '%a %Y' "$W/x.fail/$d")
	[ "$got" = "$want" ] || fail "after the failure, $d has mode/mtime '$got', not '$want'"
done
for f in a/f1 a/f2 a/f3; do
	cmp -s "$S/$f" "$W/x.fail/$f" || fail "after the failure, $f is not whole"
done
[ ! -e "$W/x.fail/z/f1" ] || fail "after the failure, z/f1 was still written"
info "failed extract: directory modes and mtimes as in the image, 'extracted 3 of 6 files'"

# ---- 4. PATH not in the image --------------------------------------------------------------

for paths in "no/such" "a/f1 no/such" "a/f1/under"; do
	# shellcheck disable=SC2086
	run_capture x_missing "$SQK" extract "$MODES" "$W/x.missing" $paths
	[ "$RC" = 1 ] || { show_err; fail "extract of '$paths' exited $RC"; }
	[ ! -e "$W/x.missing" ] || fail "extract of '$paths' created the destination"
	missing=${paths##* }
	grep -q "/$missing: not in the image" "$ERR_FILE" ||
		{ show_err; fail "extract of '$paths': the message does not name /$missing"; }
done
info "PATH not in the image: nothing created, exit 1, the path named"
