#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Error handling: every failed build exits non-zero (1 for build errors, 2 for usage errors, as
# `sqk mkimage --help` documents), names the culprit on stderr, and leaves the destination
# directory exactly as it was: no new image, no temp file, a pre-existing image byte-identical.
#  (a) unreadable file   (b) unreadable directory    (both as uid 65534 via setpriv)
#  (c) file whose size differs from its content (sysfs)   (d) ENOSPC on a small tmpfs,
#  and a missing or full $TMPDIR for what waits in temporary files (--mem 1M)
#  (e) SIGTERM / SIGINT during a long build   (f) image inside a source (succeeds, not included)
#  (g) bad options   (h) nonexistent source, bad image paths
#  (i) (a), (d), (e) again with the named-temp fallback used where O_TMPFILE is unsupported
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 unsquashfs timeout

W=$(scratch bad)
cd "$W" || fail "cd $W"
PRE_IMG_DATA=$W/pre-image.bin
# an "image" to keep: it starts with the SquashFS magic (a file that does not is never replaced)
{ printf hsqs; head -c 12284 /dev/urandom; } >"$PRE_IMG_DATA"

# new_dest NAME [OWNER]: a destination dir holding "old.sqsh" (pre-existing image) and a
# bystander file; prints its path.
new_dest() {
	local d=$W/dest.$1
	mkdir -p "$d"
	cp "$PRE_IMG_DATA" "$d/old.sqsh"
	echo bystander >"$d/other.txt"
	[ -n "${2:-}" ] && chown -R "$2" "$d"
	echo "$d"
}

# expect_fail CASE DEST CODE PATTERN CMD...: CMD must exit CODE ("nz" = any non-zero) with
# stderr matching the extended regex PATTERN, and leave DEST as it was.
expect_fail() {
	local case=$1 dest=$2 code=$3 pat=$4
	shift 4
	dir_state "$dest" >"$TMP/state.before"
	run_capture "$case" timeout -k 5 120 "$@"
	if [ "$RC" = 0 ]; then
		fail "$case: succeeded but must fail: $*"
	elif [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
		fail "$case: timed out after 120 s: $*"
	elif [ "$RC" -gt 128 ]; then
		show_err
		fail "$case: killed by signal $((RC - 128)) (crash?): $*"
	elif [ "$code" != nz ] && [ "$RC" != "$code" ]; then
		show_err
		fail "$case: exit status $RC, expected $code: $*"
	fi
	if ! grep -Eq -- "$pat" "$ERR_FILE"; then
		show_err
		fail "$case: stderr does not match /$pat/"
	fi
	assert_dir_state "$dest" "$TMP/state.before" "$case"
	info "$case: exit $RC, stderr: $(head -n 1 "$ERR_FILE")"
}

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
SQK_NOBODY=$SQK
if ! command -v setpriv >/dev/null; then
	info "setpriv missing: cases (a) and (b) skipped"
	NOBODY=""
elif ! $NOBODY test -x "$SQK"; then
	# the binary's directory is not reachable for uid 65534: use a copy
	mkdir -p "$W/bin" && cp "$SQK" "$W/bin/sqk" && chmod 755 "$W/bin/sqk"
	SQK_NOBODY=$W/bin/sqk
fi

# ---- (a) unreadable regular file, (b) unreadable directory ------------------------------
if [ -n "$NOBODY" ]; then
	S=$W/src_a
	mkdir -p "$S/d1/d2"
	head -c 300000 /dev/urandom >"$S/d1/big"
	echo hello >"$S/d1/d2/small"
	echo secret >"$S/d1/d2/secret.txt"
	chmod -R a+rX "$S"
	chmod 000 "$S/d1/d2/secret.txt"
	D=$(new_dest a 65534:65534)
	expect_fail "a: unreadable file (existing image)" "$D" 1 'd1/d2/secret\.txt' \
		$NOBODY "$SQK_NOBODY" mkimage -noappend -j 2 "$S" "$D/old.sqsh"
	expect_fail "a: unreadable file (new image)" "$D" 1 'd1/d2/secret\.txt' \
		$NOBODY "$SQK_NOBODY" mkimage "$S" "$D/new.sqsh"
	# sanity: readable again, the same build works as that user
	chmod 644 "$S/d1/d2/secret.txt"
	run_capture a_ok $NOBODY "$SQK_NOBODY" mkimage "$S" "$D/new.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "a: the build as uid 65534 fails even with everything readable"; }
	rm -f "$D/new.sqsh"

	S=$W/src_b
	mkdir -p "$S/open/x" "$S/locked/inner"
	echo a >"$S/open/x/f"
	echo b >"$S/locked/inner/g"
	chmod -R a+rX "$S"
	chmod 000 "$S/locked"
	D=$(new_dest b 65534:65534)
	expect_fail "b: unreadable directory (existing image)" "$D" 1 'locked' \
		$NOBODY "$SQK_NOBODY" mkimage -noappend "$S" "$D/old.sqsh"
	expect_fail "b: unreadable directory (new image)" "$D" 1 'locked' \
		$NOBODY "$SQK_NOBODY" mkimage -j 1 "$S" "$D/new.sqsh"
	chmod 311 "$S/locked" # searchable but not listable
	expect_fail "b: unlistable directory (mode 311)" "$D" 1 'locked' \
		$NOBODY "$SQK_NOBODY" mkimage "$S" "$D/new.sqsh"
fi

# ---- (c) a file whose content is shorter than its st_size --------------------------------
S=$W/src_c
mkdir -p "$S/dir"
echo x >"$S/dir/file"
SYSF=""
for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
	/sys/power/state /sys/kernel/profiling /sys/class/net/lo/address; do
	if [ -r "$f" ] && [ "$(stat -c %s "$f" 2>/dev/null)" -gt "$(wc -c <"$f" 2>/dev/null || echo 0)" ]; then
		SYSF=$f
		break
	fi
done
if [ -n "$SYSF" ]; then
	D=$(new_dest c)
	info "c: using $SYSF (st_size $(stat -c %s "$SYSF"), content $(wc -c <"$SYSF") bytes)"
	expect_fail "c: short file as a source" "$D" 1 "$(basename "$SYSF")" \
		"$SQK" mkimage -noappend "$S" "$SYSF" "$D/old.sqsh"
	expect_fail "c: short file as a source (new image)" "$D" 1 "$(basename "$SYSF")" \
		"$SQK" mkimage "$S" "$SYSF" "$D/new.sqsh"
	# the same file bind-mounted inside the tree
	touch "$S/dir/sysfile"
	if mount --bind "$SYSF" "$S/dir/sysfile" 2>/dev/null; then
		_MOUNTS="$S/dir/sysfile $_MOUNTS"
		expect_fail "c: short file inside the tree" "$D" 1 'dir/sysfile' \
			"$SQK" mkimage "$S" "$D/new.sqsh"
		umount "$S/dir/sysfile"
	fi
else
	info "c: no sysfs file with st_size > content found; skipped"
fi

# ---- (d) ENOSPC --------------------------------------------------------------------------
S=$W/src_d
mkdir -p "$S"
head -c 2097152 /dev/urandom >"$S/random"
mkdir -p "$W/full"
if mount -t tmpfs -o size=256k,mode=755 tmpfs "$W/full"; then
	_MOUNTS="$W/full $_MOUNTS"
	expect_fail "d: ENOSPC (new image)" "$W/full" 1 '[Ss]pace' \
		"$SQK" mkimage -c lz4 "$S" "$W/full/img.sqsh"
	[ -z "$(ls -A "$W/full")" ] || fail "d: tmpfs not empty after ENOSPC: $(ls -A "$W/full")"
	{ printf hsqs; head -c 65532 /dev/urandom; } >"$W/full/old.sqsh"
	expect_fail "d: ENOSPC (existing image)" "$W/full" 1 '[Ss]pace' \
		"$SQK" mkimage -noappend -c lz4 "$S" "$W/full/old.sqsh"
	umount "$W/full"
else
	info "d: cannot mount tmpfs; skipped"
fi
# 8,000 entries with long names: over --mem 1M, directory entries, digests and tails go to
# temporary files in $TMPDIR; a missing or full one stops the build with its path, leaving
# nothing in the destination (and nothing in $TMPDIR: the files were unnamed).
S=$W/src_tmp
python3 - "$S" <<'EOF2' || fail "cannot write the tree for the TMPDIR cases"
import os, sys
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/d{d}")
    for i in range(2000):
        with open(f"{sys.argv[1]}/d{d}/{i:06d}-{'x' * 150}", "w") as o:
            o.write("file %d %d\n" % (d, i))
EOF2
D=$(new_dest tmpdir)
expect_fail "d: TMPDIR missing" "$D" 1 "temporary file in '$W/no-such-dir'" \
	env TMPDIR="$W/no-such-dir" "$SQK" mkimage --mem 1M "$S" "$D/img.sqsh"
mkdir -p "$W/fulltmp"
if mount -t tmpfs -o size=64k,mode=1777 tmpfs "$W/fulltmp"; then
	_MOUNTS="$W/fulltmp $_MOUNTS"
	expect_fail "d: TMPDIR full" "$D" 1 "temporary file in '$W/fulltmp'.*[Ss]pace" \
		env TMPDIR="$W/fulltmp" "$SQK" mkimage --mem 1M "$S" "$D/img.sqsh"
	[ -z "$(ls -A "$W/fulltmp")" ] || fail "d: files left in the full TMPDIR: $(ls -A "$W/fulltmp")"
	umount "$W/fulltmp"
fi
sqk_build --mem 1M "$S" "$D/ok.sqsh"
extract "$D/ok.sqsh" "$W/x.tmp"
tree_equal "d: --mem 1M with a working TMPDIR" "$S" "$W/x.tmp"
rm -rf "$W/x.tmp" "$S"

# ---- (e) SIGTERM / SIGINT during a long build ---------------------------------------------
S=$W/src_e
mkdir -p "$S/a" "$S/b"
head -c 150M /dev/urandom >"$S/a/r1"
head -c 150M /dev/urandom >"$S/b/r2"
signal_case() { # PREFIX-CMD... ; uses $sig $target
	D=$(new_dest "e$sig")
	dir_state "$D" >"$TMP/state.before"
	# -c xz -j 1 on random data: slow enough (tens of seconds) to be interrupted
	res=$(python3 - "$sig" "$D" "$TMP/e.err" "$@" "$SQK" mkimage -noappend -c xz -j 1 "$S" "$D/$target" <<'EOF'
import os, signal, subprocess, sys, time
sig = getattr(signal, 'SIG' + sys.argv[1])
watch, errf, cmd = sys.argv[2], sys.argv[3], sys.argv[4:]
before = set(os.listdir(watch))
def child():
    # bash starts background jobs with SIGINT ignored; give the builder default dispositions
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
p = subprocess.Popen(cmd, preexec_fn=child, stdout=subprocess.DEVNULL, stderr=open(errf, 'w'))
t0 = time.time()
while time.time() - t0 < 1.5 and p.poll() is None and set(os.listdir(watch)) == before:
    time.sleep(0.02)
seen = sorted(set(os.listdir(watch)) - before)
time.sleep(0.5)
if p.poll() is not None:
    print('early %d' % p.returncode)
    sys.exit(0)
p.send_signal(sig)
t1 = time.time()
try:
    rc = p.wait(30)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    print('hung')
    sys.exit(0)
print('rc %d %.2f %s' % (rc, time.time() - t1, ','.join(seen) or '-'))
EOF
)
	case $res in
	early*) fail "e: SIG$sig: the build finished before the signal (${res#early }); make the input bigger" ;;
	hung) fail "e: SIG$sig: sqk did not exit within 30 s of the signal" ;;
	rc*) ;;
	*) fail "e: SIG$sig: signal helper failed: $res" ;;
	esac
	set -- $res
	[ "$2" != 0 ] || fail "e: SIG$sig -> $target: exit status 0 after the signal"
	assert_dir_state "$D" "$TMP/state.before" "e: SIG$sig -> $target"
	info "e: SIG$sig -> $target ${LABEL:-}: exit $2 after $3 s (new entries seen while running: $4); $(head -n 1 "$TMP/e.err")"
	rm -rf "$D"
}
for sig in TERM INT; do
	for target in old.sqsh new.sqsh; do
		signal_case
	done
done

# ---- (i) the named-temporary fallback (no O_TMPFILE): the same guarantees -----------------------
# An LD_PRELOAD shim makes open(O_TMPFILE) fail with EOPNOTSUPP, as on filesystems without it.
SHIM=$W/notmpfile.so
if command -v cc >/dev/null && cc -shared -fPIC -o "$SHIM" -x c - -ldl 2>"$TMP/cc.err" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/types.h>
#define WRAP(name, ...) \
	int name(__VA_ARGS__ const char *p, int flags, ...) \
	{ \
		mode_t m = 0; \
		if (flags & (O_CREAT | __O_TMPFILE)) { \
			va_list ap; \
			va_start(ap, flags); \
			m = va_arg(ap, int); \
			va_end(ap); \
		} \
		if ((flags & O_TMPFILE) == O_TMPFILE) { \
			errno = EOPNOTSUPP; \
			return -1; \
		}
WRAP(open)
	static int (*real)(const char *, int, ...);
	if (!real) real = dlsym(RTLD_NEXT, "open");
	return real(p, flags, m);
}
WRAP(open64)
	static int (*real)(const char *, int, ...);
	if (!real) real = dlsym(RTLD_NEXT, "open64");
	return real(p, flags, m);
}
WRAP(openat, int dfd,)
	static int (*real)(int, const char *, int, ...);
	if (!real) real = dlsym(RTLD_NEXT, "openat");
	return real(dfd, p, flags, m);
}
WRAP(openat64, int dfd,)
	static int (*real)(int, const char *, int, ...);
	if (!real) real = dlsym(RTLD_NEXT, "openat64");
	return real(dfd, p, flags, m);
}
EOF
then
	LABEL="(no O_TMPFILE)"
	for sig in TERM INT; do
		target=old.sqsh
		signal_case env LD_PRELOAD="$SHIM"
	done
	LABEL=""
	# a successful build through the fallback leaves only the image
	D=$(new_dest i)
	run_capture i_ok env LD_PRELOAD="$SHIM" "$SQK" mkimage "$W/src_c/dir" "$D/new.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "i: build with the named-temp fallback failed"; }
	[ "$(ls -A "$D" | LC_ALL=C sort | tr '\n' ' ')" = "new.sqsh old.sqsh other.txt " ] ||
		fail "i: after a fallback build the destination holds: $(ls -A "$D")"
	[ "$(stat -c %a "$D/new.sqsh")" = 644 ] || info "note: fallback image mode is $(stat -c %a "$D/new.sqsh")"
	extract "$D/new.sqsh" "$W/x.i"
	tree_equal "i: fallback build" "$W/src_c/dir" "$W/x.i"
	rm -f "$D/new.sqsh"
	if [ -n "$NOBODY" ]; then
		chown -R 65534:65534 "$D"
		chmod 000 "$W/src_a/d1/d2/secret.txt"
		expect_fail "i: unreadable file (no O_TMPFILE)" "$D" 1 'd1/d2/secret\.txt' \
			$NOBODY env LD_PRELOAD="$SHIM" "$SQK_NOBODY" mkimage -noappend "$W/src_a" "$D/old.sqsh"
	fi
	if mount -t tmpfs -o size=256k,mode=755 tmpfs "$W/full"; then
		_MOUNTS="$W/full $_MOUNTS"
		{ printf hsqs; head -c 65532 /dev/urandom; } >"$W/full/old.sqsh"
		expect_fail "i: ENOSPC (no O_TMPFILE)" "$W/full" 1 '[Ss]pace' \
			env LD_PRELOAD="$SHIM" "$SQK" mkimage -noappend -c lz4 "$W/src_d" "$W/full/old.sqsh"
		umount "$W/full"
	fi
else
	info "i: cannot build the LD_PRELOAD shim (no cc?): $(head -n 3 "$TMP/cc.err"); skipped"
fi
rm -rf "$S"

# ---- (f) image inside a source --------------------------------------------------------------
S=$W/src_f
$MKTREE --small --no-sparse --no-special "$S" >/dev/null || fail "mktree failed"
n_src=$(find "$S" -mindepth 1 | wc -l)
# check_self IMAGE REL: the image holds exactly the source minus REL (treecmp reports any extra
# entry such as a temp file as "unexpected in B"); directory mtimes around REL changed, so
# only the root's attributes are ignored.
check_self() {
	local img=$1 rel=$2
	rm -rf "$W/x.f"
	extract "$img" "$W/x.f"
	[ -e "$W/x.f/$rel" ] && fail "f: the image contains itself ($rel)"
	find "$W/x.f" -name '.sqk-*' | grep -q . && fail "f: the image contains a temp file: $(find "$W/x.f" -name '.sqk-*')"
	tree_equal "f: image $rel inside the source" "$S" "$W/x.f" --exclude "$rel" --ignore-root-attrs
	rm -rf "$W/x.f"
}
sqk_build "$S" "$S/out.sqsh"
[ "$(find "$S" -mindepth 1 | wc -l)" = $((n_src + 1)) ] || fail "f: source holds leftovers: $(find "$S" -name '.sqk-*')"
check_self "$S/out.sqsh" out.sqsh
# again, with the old image present: it is replaced, and still not included
sqk_build -noappend -b 64K "$S" "$S/out.sqsh"
[ "$(sb_u32 "$S/out.sqsh" 12)" = 65536 ] || fail "f: rebuilding over the image inside the source did not replace it"
[ "$(find "$S" -mindepth 1 | wc -l)" = $((n_src + 1)) ] || fail "f: source holds leftovers: $(find "$S" -name '.sqk-*')"
check_self "$S/out.sqsh" out.sqsh
rm -f "$S/out.sqsh"
# in a subdirectory, with several sources (image inside the second one)
sqk_build "$S/files" "$S/dup" "$S/dup/out2.sqsh"
extract "$S/dup/out2.sqsh" "$W/x.f2"
[ -e "$W/x.f2/dup/out2.sqsh" ] && fail "f: image dup/out2.sqsh includes itself"
find "$W/x.f2" -name '.sqk-*' | grep -q . && fail "f: image dup/out2.sqsh includes a temp file"
[ "$(ls -A "$W/x.f2" | tr '\n' ' ')" = "dup files " ] || fail "f: several sources: root holds $(ls -A "$W/x.f2")"
tree_equal "f: several sources, image inside one" "$S/files" "$W/x.f2/files"
rm -f "$S/dup/out2.sqsh"
cmp -s "$S/dup/a/big1" "$W/x.f2/dup/a/big1" || fail "f: dup/a/big1 differs"
rm -rf "$W/x.f2"

# ---- (g) bad options --------------------------------------------------------------------------
S=$W/src_g
mkdir -p "$S"
echo hi >"$S/f"
D=$(new_dest g)
OLD=$D/old.sqsh NEW=$D/new.sqsh
expect_fail "g: -b 3000" "$D" 2 '(-b|block).*3000|3000.*(-b|block)' "$SQK" mkimage -b 3000 "$S" "$OLD"
expect_fail "g: -b 2M" "$D" 2 '(-b|block)' "$SQK" mkimage -b 2M "$S" "$NEW"
expect_fail "g: -b 2K" "$D" 2 '(-b|block)' "$SQK" mkimage -b 2K "$S" "$NEW"
expect_fail "g: -b 0" "$D" 2 '(-b|block)' "$SQK" mkimage -b 0 "$S" "$NEW"
expect_fail "g: -b 96K" "$D" 2 '(-b|block)' "$SQK" mkimage -b 96K "$S" "$NEW"
expect_fail "g: -b 4097" "$D" 2 '(-b|block)' "$SQK" mkimage --block-size 4097 "$S" "$NEW"
expect_fail "g: -b 128Q" "$D" 2 '(-b|block)' "$SQK" mkimage -b 128Q "$S" "$NEW"
expect_fail "g: -b 4294967296K" "$D" 2 '(-b|block)' "$SQK" mkimage -b 4294967296K "$S" "$NEW"
expect_fail "g: -c nosuch" "$D" 2 'nosuch' "$SQK" mkimage -c nosuch "$S" "$OLD"
expect_fail "g: --compressor lzma" "$D" 2 'lzma' "$SQK" mkimage --compressor lzma "$S" "$NEW"
expect_fail "g: -l 99" "$D" 2 '(-l|level)' "$SQK" mkimage -l 99 "$S" "$NEW"
expect_fail "g: -c gzip -l 0" "$D" 2 '(-l|level)' "$SQK" mkimage -c gzip -l 0 "$S" "$NEW"
expect_fail "g: -c xz -l 10" "$D" 2 '(-l|level)' "$SQK" mkimage -c xz -l 10 "$S" "$NEW"
expect_fail "g: -j 0" "$D" 2 '(-j|thread)' "$SQK" mkimage -j 0 "$S" "$NEW"
expect_fail "g: -j -1" "$D" 2 '(-j|thread)' "$SQK" mkimage -j -1 "$S" "$NEW"
expect_fail "g: -j x" "$D" 2 '(-j|thread)' "$SQK" mkimage -j x "$S" "$NEW"
expect_fail "g: --bcj nosuch" "$D" 2 '(bcj|nosuch)' "$SQK" mkimage -c xz --bcj nosuch "$S" "$NEW"
expect_fail "g: --bcj without xz" "$D" 2 'bcj' "$SQK" mkimage --bcj x86 "$S" "$NEW"
expect_fail "g: --force-uid -1" "$D" 2 'force-uid' "$SQK" mkimage --force-uid -1 "$S" "$NEW"
expect_fail "g: --force-gid 4294967296" "$D" 2 'force-gid' "$SQK" mkimage --force-gid 4294967296 "$S" "$NEW"
expect_fail "g: --mtime abc" "$D" 2 'mtime' "$SQK" mkimage --mtime abc "$S" "$NEW"
expect_fail "g: SOURCE_DATE_EPOCH=abc" "$D" 2 'SOURCE_DATE_EPOCH' env SOURCE_DATE_EPOCH=abc "$SQK" mkimage "$S" "$NEW"
expect_fail "g: --nosuch" "$D" 2 'nosuch' "$SQK" mkimage --nosuch "$S" "$OLD"
expect_fail "g: -Z" "$D" 2 'Z' "$SQK" mkimage -Z "$S" "$NEW"
# (options come first, as documented; a trailing "-b" would be an operand)
expect_fail "g: -b missing value" "$D" 2 '(-b|block|argument)' "$SQK" mkimage -b
expect_fail "g: -e missing value" "$D" 2 '(-e|exclude|argument)' "$SQK" mkimage -e
expect_fail "g: no arguments" "$D" 2 '[Uu]sage|SOURCE|IMAGE' "$SQK" mkimage
expect_fail "g: only one argument" "$D" 2 '[Uu]sage|SOURCE|IMAGE' "$SQK" mkimage "$S"
[ "$(ls -A "$W" | grep -c '^-')" = 0 ] || fail "g: files named like options appeared in $W: $(ls -A "$W")"

# ---- (h) nonexistent source, bad image paths --------------------------------------------------
D=$(new_dest h)
expect_fail "h: nonexistent source" "$D" 1 "$W/no/such/dir" "$SQK" mkimage "$W/no/such/dir" "$D/new.sqsh"
expect_fail "h: nonexistent source (existing image)" "$D" 1 "$W/nope" "$SQK" mkimage -noappend "$W/nope" "$D/old.sqsh"
expect_fail "h: nonexistent among several sources" "$D" 1 "$W/missing2" \
	"$SQK" mkimage -noappend "$S" "$W/missing2" "$D/old.sqsh"
expect_fail "h: image in a nonexistent directory" "$D" 1 "$W/nodir" "$SQK" mkimage "$S" "$W/nodir/img.sqsh"
[ -e "$W/nodir" ] && fail "h: the missing image directory was created"
mkdir -p "$D/adir"
echo keep >"$D/adir/keep"
expect_fail "h: image path is a directory" "$D" 1 "adir" "$SQK" mkimage "$S" "$D/adir"
[ "$(cat "$D/adir/keep")" = keep ] || fail "h: directory given as the image was modified"
expect_fail "h: image is the source itself" "$D" nz "." "$SQK" mkimage "$S" "$S"
[ -d "$S" ] && [ "$(cat "$S/f")" = hi ] || fail "h: the source was damaged by 'mkimage S S'"
exit 0
