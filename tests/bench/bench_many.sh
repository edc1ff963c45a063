#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# squashkit many-files benchmark: time and peak memory of building and reading an image of N
# small files (default 1,000,000), beside mksquashfs and squashfuse_ll.
#
#   make bench                       # builds, then runs this with SQK set
#   SQK=/abs/build/bin/sqk bash tests/bench/bench_many.sh
#
# Environment:
#   SQK                  the sqk binary (default: build/bin/sqk of this tree; sqkfuse beside it)
#   BENCH_MANY_FILES     N, the number of files (default 1000000), 1,000 per directory
#   BENCH_MANY_TIMEOUT   seconds before a mksquashfs run is stopped (default 120, not 600: see below)
#   BENCH_JOBS           threads of both builders (default 2)
#   BENCH_TMPDIR         where the tree is written, on disk (default /var/tmp)
#   BENCH_MANY_FS=0      write the tree into a plain directory even as root (see below)
#   BENCH_MANY_CASES     which cases run (default "build mksquashfs tar list walk"): a 10M-file
#                        run takes hours with the FUSE walks, minutes with "build list"; "tar"
#                        alone writes no tree
#   BENCH_PEERS          auto|debian|anchors: which mksquashfs and squashfuse_ll (peers.sh: the
#                        newest in /opt/anchors, else Debian's); the report names their versions
#   BENCH_MANY_KEEP=DIR  keep the tree in DIR (DIR/tree.ext4 or DIR/tree, and DIR/count) and
#                        reuse it in later runs with the same N instead of writing it again
#
# The tree: TREE/s0 holds files 0 .. N/10-1, TREE/s1 the rest, in directories dNNNNNN of 1,000
# files fNNNNNNN, each a few dozen bytes naming its path and number (all distinct). As root it
# is written into a sparse ext4 image file in BENCH_TMPDIR, loop-mounted (inline_data: small
# files live in their inodes), which is fast to write and to remove; otherwise into a plain
# directory there (removing a million files from a busy disk can take many minutes). Every sqk
# case runs at N/10 files (TREE/s0, an image of it) and at N (TREE): the difference gives the
# memory per file, measured rather than guessed, and a baseline for the 10M-file extrapolation.
#   build   sqk mkimage -q -j J TREE IMG; mksquashfs TREE IMG -comp zstd -noappend -no-progress
#           -quiet -processors J, with and without -no-duplicates, at N only, under a timeout
#   tar     tar_many.py COUNT | sqk mkimage -q -j J --tar - IMG: the same files as a ustar stream
#           (directories first, then the files interleaved across all directories, the order
#           hardest for the external sort of entries), never stored; peak RSS and CPU are sqk's,
#           the wall time includes the generator's share of the CPUs (about 6 s per 1M files)
#   list    sqk ls -R IMG >/dev/null
#   walk    sqkfuse IMG MNT -f, and squashfuse_ll IMG MNT -f when installed (same sqk image):
#           find MNT -type f | wc -l, then ls -lR MNT >/dev/null; the daemon's peak RSS is its
#           VmHWM in /proc/PID/status after each walk
# Every image is checked: its file count (sqk info) and three files read back with sqk cat.
# Goal, per sqk tool: 10M files in <= 1 GiB peak RSS; checked when N >= 10,000,000, otherwise
# extrapolated: RSS(N) + (RSS(N) - RSS(N/10)) / (0.9 N) * (10M - N).
# Wall seconds from date, peak RSS from GNU time (installed with apt-get when missing and root).
# Caches are warm: the tree was just written (then synced), or is read once when reused.
# mksquashfs's timeout defaults to 120 s: its duplicate search compares every pair of files of
# the same size, and N files of a few dozen bytes share a handful of sizes, so it is quadratic
# here (100,000 files: 110 to 220 s on a busy 2-CPU machine, 3 to 8 s with -no-duplicates);
# at 1,000,000 files no reasonable timeout is reached and a longer one only lengthens the run.
# Exit status: 0 when every run succeeded (goals missed and mksquashfs timeouts are reported,
# not fatal), 1 when a tool failed or gave a wrong count, 2 on a setup error.

set -u
set -o pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SQK=${SQK:-$top/build/bin/sqk}
SQKFUSE=$(dirname "$SQK")/sqkfuse
N=${BENCH_MANY_FILES:-1000000}
TIMEOUT=${BENCH_MANY_TIMEOUT:-120}
JOBS=${BENCH_JOBS:-2}
KEEP=${BENCH_MANY_KEEP:-}
CASES=" ${BENCH_MANY_CASES:-build mksquashfs tar list walk} "
PER_DIR=1000
GOAL_FILES=10000000
GOAL_KIB=$((1024 * 1024))

die() { echo "bench_many: $*" >&2; exit 2; }
has_case() { case $CASES in *" $1 "*) return 0;; esac; return 1; }
for c in $CASES; do
	case $c in build|mksquashfs|tar|list|walk) ;; *) die "BENCH_MANY_CASES: unknown case '$c'";; esac
done
need_tree=0 # the tar case alone needs no tree on disk
for c in build mksquashfs list walk; do has_case "$c" && need_tree=1; done
log() { echo "bench_many: $*"; }

case $N in ''|*[!0-9]*) die "BENCH_MANY_FILES must be an integer >= 10 (got '$N')";; esac
[ "$N" -ge 10 ] || die "BENCH_MANY_FILES must be an integer >= 10 (got '$N')"
case $TIMEOUT in ''|*[!0-9]*|0) die "BENCH_MANY_TIMEOUT must be a positive integer (got '$TIMEOUT')";; esac
case $JOBS in ''|*[!0-9]*|0) die "BENCH_JOBS must be a positive integer (got '$JOBS')";; esac
[ -x "$SQK" ] || die "sqk binary not found or not executable: $SQK (run 'make' first)"
command -v python3 >/dev/null 2>&1 || die "python3 is needed to write the tree"
is_root=0; [ "$(id -u)" = 0 ] && is_root=1
N_SMALL=$((N / 10))

# ---------------------------------------------------------------- scratch ---
S= imgdir= imgmnt=0 treefs= tree= tree_tmp=1 fuse_pid= fuse_mnt= run_pid=
# run CMD...: runs CMD in a session of its own and waits for it, so that a signal to this script
# is handled at once (not after CMD) and cleanup can stop CMD and its children
run() {
	local rc
	setsid -w "$@" &
	run_pid=$!
	wait "$run_pid"; rc=$?
	run_pid=
	return $rc
}
umount_fuse() { # MNT: unmount a FUSE mount, lazily if it stays busy
	fusermount3 -u "$1" 2>/dev/null || fusermount -u "$1" 2>/dev/null || umount "$1" 2>/dev/null ||
		umount -l "$1" 2>/dev/null
}
umount_retry() { # MNT: unmount, waiting a little for its last users, lazily at the end
	for _ in 1 2 3 4 5 6 7 8 9 10; do umount "$1" 2>/dev/null && return; sleep 0.3; done
	mountpoint -q "$1" && umount -l "$1"
}
remove_tree() { # DIR: remove a big tree, one rm per directory of files, JOBS at a time
	find "$1" -mindepth 2 -maxdepth 2 -type d -print0 2>/dev/null |
		xargs -0 -r -n 8 -P "$JOBS" rm -rf
	rm -rf "$1"
}
cleanup() {
	trap - EXIT INT TERM HUP
	if [ -n "$run_pid" ]; then
		kill -TERM -- -"$run_pid" 2>/dev/null || kill -TERM "$run_pid" 2>/dev/null
		wait "$run_pid" 2>/dev/null
	fi
	if [ -n "$fuse_mnt" ] && mountpoint -q "$fuse_mnt" 2>/dev/null; then umount_fuse "$fuse_mnt"; fi
	if [ -n "$fuse_pid" ] && kill -0 "$fuse_pid" 2>/dev/null; then
		sleep 1; kill "$fuse_pid" 2>/dev/null
	fi
	[ -n "$treefs" ] && mountpoint -q "$treefs" && umount_retry "$treefs"
	[ "$imgmnt" = 1 ] && umount_retry "$imgdir"
	[ -n "$imgdir" ] && rm -rf "$imgdir"
	[ "$tree_tmp" = 1 ] && [ -z "$treefs" ] && [ -n "$tree" ] && [ -d "$tree" ] && remove_tree "$tree"
	[ -n "$S" ] && rm -rf "$S"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

S=$(mktemp -d "${BENCH_TMPDIR:-/var/tmp}/sqk-bench-many.XXXXXX") || die "mktemp in ${BENCH_TMPDIR:-/var/tmp} failed"
mkdir "$S/logs" "$S/mnt" || die "mkdir in $S failed"
imgdir=$(mktemp -d "${TMPDIR:-/tmp}/sqk-bench-many-img.XXXXXX") || die "mktemp failed"
if [ "$is_root" = 1 ] && mount -t tmpfs -o mode=0700 sqk-bench-many "$imgdir" 2>/dev/null; then
	imgmnt=1
	log "images go to tmpfs $imgdir"
else
	log "images go to $imgdir (not a private tmpfs: not root or mount failed)"
fi

# ---------------------------------------------------------------- tools -----
have_gnu_time() { /usr/bin/time -f '%e %M' -o /dev/null true >/dev/null 2>&1; }
if ! have_gnu_time && [ "$is_root" = 1 ] && command -v apt-get >/dev/null 2>&1; then
	log "installing GNU time via apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null 2>&1; }
fi
have_gnu_time || die "GNU time (/usr/bin/time, package 'time') is needed for peak RSS"
. "$here/peers.sh"
peers_init "$here"
peers_pick mksquashfs squashfuse_ll
MKSQ=$(peer mksquashfs) MKSQ_L=$(peer_label mksquashfs)
SFLL=$(peer squashfuse_ll) SFLL_L=$(peer_label squashfuse_ll)
have_mks=0; [ -n "$MKSQ" ] && have_mks=1
fuse_ok=1 fuse_why=
if [ ! -x "$SQKFUSE" ]; then fuse_ok=0 fuse_why="sqkfuse not built (no libfuse3 or HAVE_FUSE=0)"
elif [ ! -c /dev/fuse ]; then fuse_ok=0 fuse_why="no /dev/fuse"
fi
have_sfll=0; [ -n "$SFLL" ] && have_sfll=1

# timed OUT CMD...: runs CMD with stdout to OUT and stderr to $S/err; leaves wall seconds in
# SECS and peak RSS (KiB) in RSS; returns CMD's status.
timed() {
	local out=$1 t0 t1 rc
	shift
	t0=$(date +%s.%N)
	run /usr/bin/time -f '%M' -o "$S/time" "$@" >"$out" 2>"$S/err"; rc=$?
	t1=$(date +%s.%N)
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	RSS=$(tail -n 1 "$S/time")
	case $RSS in ''|*[!0-9]*) RSS=n/a;; esac
	return $rc
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
commas() { echo "$1" | sed -e ':a' -e 's/^\([0-9]\{1,\}\)\([0-9]\{3\}\)/\1,\2/' -e 'ta'; }
gib() { awk -v k="$1" 'BEGIN { printf "%.2f", k / 1048576 }'; }
mib() { case $1 in n/a|'') echo n/a;; *) awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }';; esac; }
image_files() { "$SQK" info --json "$1" 2>/dev/null | sed -n 's/.*"file": *\([0-9]*\).*/\1/p' | head -n 1; }
fail_log() { # MESSAGE: a failed run, with the end of its stderr
	failed=1
	log "FAILED: $1"
	[ -s "$S/err" ] && tail -n 10 "$S/err" | sed 's/^/  | /'
}

# ---------------------------------------------------------------- tree ------
# Writes files [0, N) under $1 on JOBS processes, one directory of 1,000 files per task.
write_tree() {
	python3 - "$1" "$N" "$N_SMALL" "$PER_DIR" "$JOBS" <<'EOF'
import multiprocessing, os, sys

root, n, small, per, jobs = sys.argv[1], *map(int, sys.argv[2:])

def one_dir(d):
    lo, hi = d * per, min(n, (d + 1) * per)
    written = 0
    # a directory never straddles s0/s1: s0 ends at file `small`
    for part, a, b in (("s0", lo, min(hi, small)), ("s1", max(lo, small), hi)):
        if a >= b:
            continue
        rel = "%s/d%06d" % (part, d)
        os.makedirs(os.path.join(root, rel), exist_ok=True)
        dfd = os.open(os.path.join(root, rel), os.O_RDONLY | os.O_DIRECTORY)
        try:
            for i in range(a, b):
                name = "f%07d" % i
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644,
                             dir_fd=dfd)
                try:
                    os.write(fd, b"%s/%s: file %d of %d\n" % (rel.encode(), name.encode(), i, n))
                finally:
                    os.close(fd)
                written += 1
        finally:
            os.close(dfd)
    return written

os.makedirs(os.path.join(root, "s0"))
os.makedirs(os.path.join(root, "s1"))
with multiprocessing.get_context("fork").Pool(jobs) as pool:  # the worker is defined on stdin
    total = sum(pool.imap_unordered(one_dir, range((n + per - 1) // per), chunksize=4))
if total != n:
    sys.exit("wrote %d files, expected %d" % (total, n))
EOF
}

# make_fs FILE: a sparse ext4 image for the tree, with room for N inodes (at most 32,768 per
# 128 MiB group) and inline_data, so that files of a few dozen bytes live in their inodes.
# Removing it is one umount and one unlink instead of N unlinks (minutes on a busy disk).
make_fs() {
	rm -f "$1"
	truncate -s $((N * 5120 + (1 << 30))) "$1" &&
		mkfs.ext4 -q -F -N $((N + N / PER_DIR + 1000)) -O inline_data \
			-E lazy_itable_init=1,lazy_journal_init=1 "$1" </dev/null >"$S/err" 2>&1
}
# mount_fs FILE: loop-mounts it on $treefs
mount_fs() {
	treefs=$S/treefs
	mkdir -p "$treefs" && mount -o loop,noatime,noinit_itable "$1" "$treefs" 2>"$S/err" ||
		{ treefs=; return 1; }
}

load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)
if [ "$need_tree" = 1 ]; then
# Where the tree lives: in an ext4 image file loop-mounted (root, mkfs.ext4), else a directory;
# either in $S (removed at the end) or in BENCH_MANY_KEEP (kept, reused when it has N files).
base=$S
if [ -n "$KEEP" ]; then
	tree_tmp=0
	mkdir -p "$KEEP" || die "cannot create BENCH_MANY_KEEP=$KEEP"
	base=$(cd "$KEEP" && pwd)
fi
use_fs=0
[ "$is_root" = 1 ] && [ "${BENCH_MANY_FS:-1}" != 0 ] && command -v mkfs.ext4 >/dev/null 2>&1 && use_fs=1
fsimg=$base/tree.ext4
reuse=0
if [ -n "$KEEP" ] && [ "$(cat "$base/count" 2>/dev/null)" = "$N" ]; then
	if [ "$use_fs" = 1 ] && [ -f "$fsimg" ]; then reuse=1
	elif [ "$use_fs" = 0 ] && [ -d "$base/tree" ]; then reuse=1
	fi
fi
if [ "$reuse" = 0 ] && [ -n "$KEEP" ]; then
	rm -f "$base/count" "$fsimg"
	[ -e "$base/tree" ] && { log "removing the old tree in $base/tree"; remove_tree "$base/tree"; }
fi
if [ "$use_fs" = 1 ] && [ "$reuse" = 0 ] && ! make_fs "$fsimg"; then
	log "mkfs.ext4 of $fsimg failed, writing a plain directory instead: $(head -n 1 "$S/err")"
	rm -f "$fsimg"; use_fs=0
fi
if [ "$use_fs" = 1 ] && ! mount_fs "$fsimg"; then
	[ "$reuse" = 1 ] && die "cannot mount the kept tree $fsimg: $(head -n 1 "$S/err")"
	log "cannot loop-mount $fsimg, writing a plain directory instead: $(head -n 1 "$S/err")"
	rm -f "$fsimg"; use_fs=0
fi
if [ "$use_fs" = 1 ]; then
	tree=$treefs/tree
	tree_where="ext4 (inline_data) image $fsimg, loop-mounted"
else
	tree=$base/tree
	tree_where="directory $tree"
fi
if [ "$reuse" = 1 ]; then
	log "reusing the tree of $(commas "$N") files in the $tree_where; reading it once to warm the caches"
	t0=$(date +%s.%N)
	(cd "$tree" && tar cf - . 2>/dev/null | cat >/dev/null)
	tree_note="$tree_where, reused, warmed by tar in $(since "$t0") s"
else
	log "writing $(commas "$N") files of a few dozen bytes, $PER_DIR per directory, into the $tree_where ($JOBS processes)"
	t0=$(date +%s.%N)
	write_tree "$tree" || die "writing the tree failed"
	t_write=$(since "$t0")
	t0=$(date +%s.%N); sync; t_sync=$(since "$t0")
	[ -n "$KEEP" ] && echo "$N" >"$base/count"
	tree_note="$tree_where, written in $t_write s, synced in $t_sync s (caches warm)"
fi
log "tree: $tree_note"
else
	tree_tmp=0 tree_note="not written (only the tar case runs)"
fi

# ---------------------------------------------------------------- results ---
# rows: case|tool|seconds|rss_kib|files|note ; RSS_AT[key.small|key.big] for the slopes
: >"$S/rows"
declare -A RSS_AT
failed=0
row() { echo "$1|$2|$3|$4|$5|${6:-}" >>"$S/rows"; }

# ---------------------------------------------------------------- builds ----
# fpath I: the tree path of file I
fpath() {
	local part=s1
	[ "$1" -lt "$N_SMALL" ] && part=s0
	printf '%s/d%06d/f%07d' "$part" $(($1 / PER_DIR)) "$1"
}
# check_content LABEL IMG PREFIX I...: files I read back from IMG (with sqk cat) equal the tree's;
# PREFIX is the image root's path in the tree ("" or "s0/")
check_content() {
	local label=$1 img=$2 pre=$3 i p
	shift 3
	for i; do
		p=$(fpath "$i")
		"$SQK" cat "$img" "${p#"$pre"}" 2>/dev/null | cmp -s - "$tree/$p" ||
			{ failed=1; log "FAILED: ${p#"$pre"} in $label's image differs from the tree"; }
	done
}
img_bytes() { echo "image $(commas "$(stat -c %s "$1")") bytes"; }

img_small=$imgdir/small.sqsh img_big=$imgdir/big.sqsh img_mks=$imgdir/mks.sqsh
build_sqk() { # size(small|big) SRC IMG EXPECTED
	local files pre=
	[ "$1" = small ] && pre=s0/
	rm -f "$3"
	log "sqk mkimage, $(commas "$4") files"
	if timed /dev/null "$SQK" mkimage -q -j "$JOBS" "$2" "$3"; then
		files=$(image_files "$3")
		row "build $1" "sqk mkimage" "$SECS" "$RSS" "${files:-n/a}" "$(img_bytes "$3")"
		RSS_AT[mkimage.$1]=$RSS
		[ "$files" = "$4" ] || { failed=1; log "FAILED: sqk mkimage's image holds ${files:-n/a} files, the tree $4"; }
		check_content "sqk mkimage" "$3" "$pre" 0 $(($4 / 2)) $(($4 - 1))
	else
		fail_log "sqk mkimage $2 (exit $?)"
		row "build $1" "sqk mkimage" "$SECS" "$RSS" n/a "FAILED"
		rm -f "$3"
	fi
}
build_mks() { # TOOL-LABEL EXTRA-OPTIONS...
	local label=$1 rc files
	shift
	rm -f "$img_mks"
	log "$label, $(commas "$N") files (timeout $TIMEOUT s)"
	timed /dev/null timeout --foreground -k 10 "$TIMEOUT" "$MKSQ" "$tree" "$img_mks" -comp zstd -noappend \
		-no-progress -quiet -processors "$JOBS" "$@"; rc=$?
	if [ "$rc" = 0 ]; then
		files=$(image_files "$img_mks")
		row "build big" "$label" "$SECS" "$RSS" "${files:-n/a}" "$(img_bytes "$img_mks")"
		[ "$files" = "$N" ] || { failed=1; log "FAILED: $label's image holds ${files:-n/a} files, the tree $N"; }
		check_content "$label" "$img_mks" "" 0 $((N / 2)) $((N - 1))
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		row "build big" "$label" ">$TIMEOUT" "$RSS" - "did not finish in $TIMEOUT s (RSS when stopped)"
		log "$label did not finish in $TIMEOUT s (BENCH_MANY_TIMEOUT, default lowered from 600 to 120 s)"
	else
		fail_log "$label (exit $rc)"
		row "build big" "$label" "$SECS" "$RSS" n/a "FAILED"
	fi
	rm -f "$img_mks"
}

# tar_content IMG COUNT I...: files I of a tar_many.py stream of COUNT files, read back from IMG
tar_content() {
	local img=$1 n=$2 i p part
	shift 2
	for i; do
		part=s1
		[ "$i" -lt $((n / 10)) ] && part=s0
		p=$(printf '%s/d%06d/f%07d' "$part" $((i / PER_DIR)) "$i")
		[ "$("$SQK" cat "$img" "$p" 2>/dev/null)" = "$p: file $i of $n" ] ||
			{ failed=1; log "FAILED: $p in the --tar image is not the stream's"; }
	done
}
build_tar() { # size COUNT IMG
	local files t0 rc cpu
	rm -f "$3"
	log "sqk mkimage --tar -, a stream of $(commas "$2") files"
	t0=$(date +%s.%N)
	run bash -c 'set -o pipefail; python3 "$1" "$2" "$3" "$4" |
		/usr/bin/time -f "%M %U %S" -o "$5" "$6" mkimage -q -j "$7" --tar - "$8"' tar \
		"$here/tar_many.py" "$2" $(($2 / 10)) "$PER_DIR" "$S/time" "$SQK" "$JOBS" "$3" \
		>/dev/null 2>"$S/err"
	rc=$?
	SECS=$(since "$t0")
	read -r RSS cpu < <(tail -n 1 "$S/time" | awk '{ print $1, $2 + $3 }')
	case $RSS in ''|*[!0-9]*) RSS=n/a;; esac
	if [ "$rc" = 0 ]; then
		files=$(image_files "$3")
		row "tar $1" "sqk mkimage --tar -" "$SECS" "$RSS" "${files:-n/a}" "sqk CPU $cpu s, $(img_bytes "$3")"
		RSS_AT[tar.$1]=$RSS
		[ "$files" = "$2" ] || { failed=1; log "FAILED: the --tar image holds ${files:-n/a} files, the stream $2"; }
		tar_content "$3" "$2" 0 $(($2 / 2)) $(($2 - 1))
	else
		fail_log "sqk mkimage --tar - (exit $rc)"
		row "tar $1" "sqk mkimage --tar -" "$SECS" "$RSS" n/a "FAILED"
	fi
	rm -f "$3"
}

# the sqk builds run whenever there is a tree: the other cases read their images
if [ "$need_tree" = 1 ]; then
	build_sqk small "$tree/s0" "$img_small" "$N_SMALL"
	build_sqk big "$tree" "$img_big" "$N"
fi
if has_case tar; then
	build_tar small "$N_SMALL" "$imgdir/tar.sqsh"
	build_tar big "$N" "$imgdir/tar.sqsh"
fi
if ! has_case mksquashfs; then
	:
elif [ "$have_mks" = 1 ]; then
	build_mks "$MKSQ_L -no-duplicates" -no-duplicates
	build_mks "$MKSQ_L"
else
	row "build big" mksquashfs - n/a - "not installed (squashfs-tools)"
fi

# ---------------------------------------------------------------- reading ---
list_sqk() { # size IMG EXPECTED
	local files
	[ -f "$2" ] || return 0
	log "sqk ls -R, $(commas "$3") files"
	if timed /dev/null "$SQK" ls -R "$2"; then
		RSS_AT[ls.$1]=$RSS
		files=$("$SQK" ls -lR "$2" | grep -c '^-')
		row "list $1" "sqk ls -R" "$SECS" "$RSS" "$files" "files counted by a second run with -l"
		[ "$files" = "$3" ] || { failed=1; log "FAILED: sqk ls -lR lists $files files, the image holds $3"; }
	else
		fail_log "sqk ls -R $2 (exit $?)"
		row "list $1" "sqk ls -R" "$SECS" "$RSS" n/a FAILED
	fi
}
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
# walk size TOOL BIN IMG EXPECTED [LABEL]: mount IMG with BIN in the foreground (its pid is ours),
# walk it twice, read the daemon's VmHWM after each walk, unmount and collect its exit status;
# LABEL (default TOOL) names the tool in the rows, e.g. with its version.
walk() {
	local size=$1 tool=$2 bin=$3 img=$4 want=$5 label=${6:-$2} t0 t_mount n rss1 rss2 rc
	[ -f "$img" ] || return 0
	fuse_mnt=$S/mnt
	log "$tool walk, $(commas "$want") files"
	t0=$(date +%s.%N)
	"$bin" "$img" "$fuse_mnt" -f >"$S/logs/$tool.$size.log" 2>&1 &
	fuse_pid=$!
	for _ in $(seq 300); do
		mountpoint -q "$fuse_mnt" && break
		kill -0 "$fuse_pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! mountpoint -q "$fuse_mnt"; then
		cp "$S/logs/$tool.$size.log" "$S/err"
		fail_log "$tool did not mount $img"
		kill "$fuse_pid" 2>/dev/null; wait "$fuse_pid" 2>/dev/null; fuse_pid=
		row "walk $size" "$label" n/a n/a n/a "FAILED to mount"
		return
	fi
	t_mount=$(since "$t0")
	t0=$(date +%s.%N)
	run bash -c 'set -o pipefail; find "$1" -type f | wc -l' find "$fuse_mnt" >"$S/count" 2>"$S/err" ||
		fail_log "find through $tool"
	SECS=$(since "$t0"); rss1=$(hwm "$fuse_pid"); n=$(cat "$S/count")
	row "walk $size" "$label: find -type f" "$SECS" "${rss1:-n/a}" "$n" "mounted in $t_mount s"
	[ "$n" = "$want" ] || { failed=1; log "FAILED: find through $tool sees $n files, the image holds $want"; }
	t0=$(date +%s.%N)
	run ls -lR "$fuse_mnt" >/dev/null 2>"$S/err" || fail_log "ls -lR through $tool"
	SECS=$(since "$t0"); rss2=$(hwm "$fuse_pid")
	row "walk $size" "$label: ls -lR" "$SECS" "${rss2:-n/a}" - "RSS: peak since the mount"
	RSS_AT[$tool.$size]=${rss2:-n/a}
	umount_fuse "$fuse_mnt"
	wait "$fuse_pid"; rc=$?
	fuse_pid=
	if [ "$rc" != 0 ]; then
		cp "$S/logs/$tool.$size.log" "$S/err"
		fail_log "$tool exited with status $rc after the unmount"
	fi
}

if has_case list && [ "$need_tree" = 1 ]; then
	list_sqk small "$img_small" "$N_SMALL"
	list_sqk big "$img_big" "$N"
fi
if ! has_case walk; then
	:
elif [ "$fuse_ok" = 1 ]; then
	walk small sqkfuse "$SQKFUSE" "$img_small" "$N_SMALL"
	walk big sqkfuse "$SQKFUSE" "$img_big" "$N"
	if [ "$have_sfll" = 1 ]; then
		walk small squashfuse_ll "$SFLL" "$img_small" "$N_SMALL" "$SFLL_L"
		walk big squashfuse_ll "$SFLL" "$img_big" "$N" "$SFLL_L"
	else
		row "walk" squashfuse_ll - n/a - "not installed (squashfuse)"
	fi
else
	row "walk" sqkfuse - n/a - "skipped: $fuse_why"
fi

t_rm=
if [ "$tree_tmp" = 1 ]; then
	log "removing the tree"
	t0=$(date +%s.%N)
	if [ -n "$treefs" ]; then
		umount_retry "$treefs"; treefs=; rm -f "$fsimg"
	else
		remove_tree "$tree"
	fi
	t_rm=$(since "$t0"); tree=
elif [ -n "$treefs" ]; then
	umount_retry "$treefs"; treefs=
fi

# ---------------------------------------------------------------- report ----
echo
echo "== squashkit many-files bench: $(commas "$N") files of a few dozen bytes, $PER_DIR per directory =="
echo "tree          $tree_note${t_rm:+, removed in $t_rm s}"
echo "setup         $JOBS threads; sqk default (zstd 15); $MKSQ_L -comp zstd -processors $JOBS; images on $( [ "$imgmnt" = 1 ] && echo tmpfs || echo "$imgdir"); 'small' = the first $(commas "$N_SMALL") files (N/10)"
echo "load avg      before $load0, after $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a) on $(nproc 2>/dev/null || echo ?) CPUs (other load skews wall times, not RSS)"
echo "sqk           $SQK${SQK:+ ($("$SQK" version 2>/dev/null | head -n 1))}"
[ "$have_mks" = 1 ] && echo "mksquashfs    $("$MKSQ" -version 2>/dev/null | head -n 1) ($MKSQ; $(peer_from mksquashfs)); timeout $TIMEOUT s (BENCH_MANY_TIMEOUT; default lowered from 600 to 120 s: its duplicate search is quadratic on same-size files)"
[ "$have_sfll" = 1 ] && [ "$fuse_ok" = 1 ] && echo "squashfuse_ll $("$SFLL" --version 2>&1 | head -n 1) ($SFLL; $(peer_from squashfuse_ll); mounts the same sqk image)"
echo
fmt='%-11s %-36s %9s %12s %10s  %s\n'
printf "$fmt" case tool seconds 'peak RSS MiB' files note
while IFS='|' read -r c t s r f note; do
	printf "$fmt" "$c" "$t" "$s" "$(mib "$r")" "$(case $f in *[!0-9]*|'') echo "$f";; *) commas "$f";; esac)" "$note"
done <"$S/rows"
echo

# goal KEY LABEL: the 10M-file RSS goal for one tool, measured when N >= 10M, else extrapolated
# linearly from the two sizes: RSS = baseline + slope * files.
goal() {
	local label=$2 a=${RSS_AT[$1.small]:-n/a} b=${RSS_AT[$1.big]:-n/a} fit verdict
	local what="10M-file goal: <= 1 GiB peak RSS, $label" ref=${3:-}
	[ "$ref" = ref ] && what="reference (no goal): $label"
	case "$a$b" in *n/a*) echo "$what: n/a (a run failed or was skipped)"; return;; esac
	# slope in bytes per file, baseline in MiB, estimate in KiB
	fit=$(awk -v a="$a" -v b="$b" -v n1="$N_SMALL" -v n2="$N" -v g="$GOAL_FILES" 'BEGIN {
		s = (b - a) * 1024 / (n2 - n1); if (s < 0) s = 0   # no growth measured
		base = b * 1024 - s * n2
		printf "%.0f %.1f %.0f %.0f\n", s, base / 1048576, (base + s * g) / 1024, b * 1024 / n2 }')
	# shellcheck disable=SC2086
	set -- $fit
	if [ "$N" -ge "$GOAL_FILES" ]; then
		[ "$b" -le "$GOAL_KIB" ] && verdict=met || verdict="NOT met"
		[ "$ref" = ref ] && verdict="(1 GiB: $verdict)"
		echo "$what: $(mib "$b") MiB at $(commas "$N") files: $verdict ($1 B/file over a $2 MiB baseline)"
	else
		[ "$3" -le "$GOAL_KIB" ] && verdict="projected met" || verdict="projected NOT met"
		[ "$ref" = ref ] && verdict="(1 GiB: $verdict)"
		echo "$what: not checked (N = $(commas "$N") < $(commas "$GOAL_FILES")); RSS $(mib "$a") MiB at $(commas "$N_SMALL") files, $(mib "$b") MiB at $(commas "$N"): $1 B/file over a $2 MiB baseline ($4 B/file overall) -> about $(gib "$3") GiB at $(commas "$GOAL_FILES") files: $verdict"
	fi
}
[ "$need_tree" = 1 ] && goal mkimage "sqk mkimage"
has_case tar && goal tar "sqk mkimage --tar -"
has_case list && [ "$need_tree" = 1 ] && goal ls "sqk ls -R"
has_case walk && [ "$fuse_ok" = 1 ] && goal sqkfuse "sqkfuse walk"
has_case walk && [ "$fuse_ok" = 1 ] && [ "$have_sfll" = 1 ] && goal squashfuse_ll "$SFLL_L walk" ref

[ "$failed" = 0 ] || { log "at least one run failed"; exit 1; }
exit 0
