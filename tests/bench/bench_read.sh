#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# squashkit read-side benchmark, one run side by side with the peer tools:
#   extract   sqk extract -j 2 vs unsquashfs -p 2 (same image, to tmpfs)      goal <= 0.80x
#   cat       sqk cat of the largest file vs sqfscat                          goal <= 1.00x
#   verify    sqk verify -j 2 vs unsquashfs -p 2 extraction                   goal <= 1.00x
#   mount     every SquashFS reader on the one image: sqkfuse (verified reads, the default), the
#             kernel's squashfs (loop mount), squashfuse_ll; and kernel EROFS on its own image of
#             the same tree (mkfs.erofs -zzstd,level=15 -C131072, loop-mounted) when mkfs.erofs
#             is there and the kernel has erofs (skipped, saying why, otherwise). Page cache
#             dropped before each run, the mounts interleaved within each round, best of the
#             rounds: whole-tree tar (goal <= 1.0x kernel EROFS), the large files sequentially
#             (goal <= 1.0x squashfuse_ll, which verifies nothing), fio random 4 KiB psync IOPS
#             (goal >= 1.3x kernel squashfs); wall and CPU (daemon plus readers), and sqkfuse's
#             ratio against each reader.
#   verify    verified reads (the default) against --no-verify / -o noverify, on an image sqk
#             built (it carries integrity data): the tree read (sqk extract of the tree; tar of
#             it through a sqkfuse mount) and the big-file read (sqk cat; cat through sqkfuse),
#             wall and CPU (the process, or the daemon plus the readers), best of
#             BENCH_VERIFY_ROUNDS (2), each run on a fresh process or mount so that every
#             chunk is hashed: goal <= 1.10x wall, <= 1.15x CPU.
# The image of the peer cases: sqk mkimage (zstd, integrity data) of the bench corpus plus a few
# large binaries, on tmpfs; extract, cat and verify run sqk and squashfs-tools on it too. The
# verify case: sqk mkimage of the directories BENCH_VERIFY_TREE
# ("/usr/include /usr/share/doc": text, and mostly gzip files stored raw) and the two largest of
# those binaries.
# Environment: SQK (default build/bin/sqk), BENCH_CORPUS=DIR (reuse a corpus), BENCH_ROUNDS (3),
# BENCH_READ_CASES (default "peer verify": which parts run), BENCH_READ_BIGSRC=DIR (its files
# instead of the four largest of /usr/lib and /usr/bin: quick runs), BENCH_READ_QUICK=1 (the corpus
# is /usr/include alone: mkfs.erofs of the whole corpus takes minutes), BENCH_READ_IMAGES=DIR
# (keeps the two images there and reuses them on the next run: the same corpus and BIGSRC are
# then the caller's promise), BENCH_READ_SQKFUSE_B=PATH (another sqkfuse, e.g. main's, mounted on
# the same image and interleaved with this one: A/B), BENCH_READ_FIO_SECS (10), BENCH_PEERS
# (auto|debian|anchors: see peers.sh; default the newest peers in /opt/anchors, else Debian's, saying so). Every result
# line names the peer's version.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SQK=${SQK:-$HERE/../../build/bin/sqk}
SQKFUSE=$(dirname "$SQK")/sqkfuse
ROUNDS=${BENCH_ROUNDS:-3}
CASES=" ${BENCH_READ_CASES:-peer verify} "
has_case() { case $CASES in *" $1 "*) return 0;; esac; return 1; }
die() { echo "bench_read: $*" >&2; exit 2; }
log() { echo "bench_read: $*"; }
[ "$(id -u)" = 0 ] || die "needs root (mounts, drop_caches)"
[ -x "$SQK" ] && [ -x "$SQKFUSE" ] || die "build first (make)"
NEED="/usr/bin/time"
has_case peer && NEED="$NEED fio"
install_deps() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio time squashfs-tools-ng \
		squashfuse squashfs-tools >/dev/null 2>&1
}
for c in $NEED; do
	command -v "$c" >/dev/null 2>&1 && continue
	install_deps
	command -v "$c" >/dev/null 2>&1 || die "$c missing"
done
. "$HERE/peers.sh"
peers_init "$HERE"
PEERS="unsquashfs sqfscat squashfuse_ll"
if has_case peer; then
	peers_pick $PEERS mkfs.erofs
	for c in $PEERS; do
		[ -n "$(peer "$c")" ] && continue
		# Debian's are the fallback: installed when neither they nor the anchors are there
		install_deps; peers_pick "$c"
		[ -n "$(peer "$c")" ] || die "$c missing"
	done
	UNSQ=$(peer unsquashfs) SQFSCAT=$(peer sqfscat) SQFUSE=$(peer squashfuse_ll)
	L_UNSQ=$(peer_label unsquashfs) L_CAT=$(peer_label sqfscat) L_FUSE=$(peer_label squashfuse_ll)
fi

S=$(mktemp -d /var/tmp/sqk-bench-read.XXXXXX)
T=$S/tmpfs
mkdir -p "$T" "$S/m"
mount -t tmpfs -o size=8g tmpfs "$T" || die "cannot mount tmpfs"
cleanup() {
	for m in "$S"/esrc/*; do mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m"; }; done
	for m in "$S"/m/*; do mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m"; }; done
	# the daemons and the loop device let go of the image shortly after their unmount
	for _ in $(seq 25); do umount "$T" 2>/dev/null && break; sleep 0.2; done
	mountpoint -q "$T" && umount -l "$T"
	rm -rf "$S"
}
trap cleanup EXIT
trap 'exit 2' INT TERM  # then the EXIT trap cleans up (a TERM trap alone would carry on)

mkdir -p "$S/bigsrc"
if [ -n "${BENCH_READ_BIGSRC:-}" ]; then
	cp "$BENCH_READ_BIGSRC"/* "$S/bigsrc/" || die "cannot copy the files of BENCH_READ_BIGSRC"
else
	find /usr/lib /usr/bin -xdev -type f -size +5M -print0 2>/dev/null | xargs -0r ls -S 2>/dev/null |
		head -n 4 | while read -r f; do cp "$f" "$S/bigsrc/"; done
fi
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# t CMD...: wall seconds of CMD (output discarded), peak RSS in $RSS (KiB)
t() {
	/usr/bin/time -f '%e %M' -o "$S/time" "$@" >/dev/null 2>"$S/err" || {
		cat "$S/err" >&2; die "failed: $*"; }
	read -r SECS RSS <"$S/time"
	echo "$SECS"
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
tree_read() { (cd "$1" && tar -cf - . | cat >/dev/null); }
big_read() { for f in "$1"/bigsrc/* "$1"/*; do [ -f "$f" ] && cat "$f" >/dev/null; done; }
# cpu_ticks PID: user+system clock ticks used so far by a daemon (0 for the kernel mount)
cpu_ticks() { if [ -n "$1" ]; then awk '{print $14 + $15}' "/proc/$1/stat"; else echo 0; fi; }
HZ=$(getconf CLK_TCK)

# erofs_image: the kernel EROFS rival, $T/corpus.erofs of the tree the squashfs image holds (the
# corpus and bigsrc side by side, bind-mounted under one directory: mkfs.erofs takes one source);
# leaves EROFS_WHY empty when it is there, else why not, and EROFS_MKS its build seconds.
erofs_image() {
	local mk src=$S/esrc
	mk=$(peer mkfs.erofs)
	EROFS_WHY= EROFS_MKS=n/a
	if [ -z "$mk" ] && [ "$PEERS_MODE" = debian ]; then
		EROFS_WHY="no mkfs.erofs on PATH (BENCH_PEERS=debian; Debian 12's erofs-utils 1.5 has no zstd anyway)"; return
	elif [ -z "$mk" ]; then
		EROFS_WHY="no mkfs.erofs (erofs-utils 1.9.3 not in $PEERS_ANCHORS: run ../shared/anchors/build.sh)"; return
	fi
	if ! grep -qw erofs /proc/filesystems && ! { modprobe erofs 2>/dev/null && grep -qw erofs /proc/filesystems; }; then
		EROFS_WHY="the kernel has no erofs (not in /proc/filesystems, modprobe erofs failed)"; return
	fi
	mkdir -p "$src/$(basename "$C")" "$src/bigsrc"
	mount --bind "$C" "$src/$(basename "$C")" && mount --bind "$S/bigsrc" "$src/bigsrc" ||
		{ EROFS_WHY="bind mounts of the tree failed"; umount_binds; return; }
	EROFS_MKS=$(t "$mk" -zzstd,level=15 -C131072 "$T/corpus.erofs" "$src") ||
		EROFS_WHY="$(peer_label mkfs.erofs) -zzstd,level=15 -C131072 failed (its message above)"
	umount_binds
}
umount_binds() {
	local d
	for d in "$S"/esrc/*; do mountpoint -q "$d" 2>/dev/null && { umount "$d" || umount -l "$d"; }; done
}

peer_case() {
# ---- corpus and image ----
if [ -n "${BENCH_CORPUS:-}" ]; then
	C=$BENCH_CORPUS
elif [ -n "${BENCH_READ_QUICK:-}" ]; then
	C=$S/corpus
	mkdir -p "$C"
	cp -a /usr/include "$C/include"
else
	C=$S/corpus
	mkdir -p "$C"
	cp -a /usr/include "$C/include"
	cp -a /usr/share/doc "$C/doc"
	cp -a "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" "$C/pylib"
fi
IMG=$T/corpus.sqsh
KEEP=${BENCH_READ_IMAGES:-}
if [ -n "$KEEP" ] && [ -f "$KEEP/corpus.sqsh" ]; then
	cp "$KEEP/corpus.sqsh" "$IMG" || die "cannot copy $KEEP/corpus.sqsh"
	log "image: $KEEP/corpus.sqsh, reused (BENCH_READ_IMAGES)"
else
	"$SQK" mkimage -q "$C" "$S/bigsrc" "$IMG" || die "sqk mkimage failed"
	[ -n "$KEEP" ] && { mkdir -p "$KEEP" && cp "$IMG" "$KEEP/corpus.sqsh"; }
fi
"$SQK" info "$IMG" | grep -q '^root hash:' || die "the sqk image has no integrity data"
BIG=$(cd "$S/bigsrc" && ls -S | head -n 1)
log "image $(stat -c %s "$IMG") bytes (sqk mkimage: zstd, integrity data, so verified reads); large files: $(ls "$S/bigsrc" | tr '\n' ' ')"
log "peers:"
peers_summary | sed 's/^/  /'
log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$KEEP" ] && [ -f "$KEEP/corpus.erofs" ]; then
	cp "$KEEP/corpus.erofs" "$T/corpus.erofs" || die "cannot copy $KEEP/corpus.erofs"
	EROFS_WHY='' EROFS_MKS="(reused from $KEEP)"
else
	erofs_image
	[ -n "$KEEP" ] && [ -z "$EROFS_WHY" ] && cp "$T/corpus.erofs" "$KEEP/corpus.erofs"
fi

# ---- extract, cat, verify: sqk against squashfs-tools on the same image ----
ext_sqk=(); ext_uns=(); cat_sqk=(); cat_sfs=(); ver=()
for r in $(seq "$ROUNDS"); do
	rm -rf "$T/x" "$T/y"
	ext_sqk+=("$(t "$SQK" extract -j 2 "$IMG" "$T/x")"); rm -rf "$T/x"
	ext_uns+=("$(t "$UNSQ" -p 2 -d "$T/y" "$IMG")"); rm -rf "$T/y"
	cat_sqk+=("$(t "$SQK" cat "$IMG" "bigsrc/$BIG")")
	cat_sfs+=("$(t "$SQFSCAT" "$IMG" "bigsrc/$BIG")")
	ver+=("$(t "$SQK" verify -j 2 "$IMG")")
done
E1=$(printf '%s\n' "${ext_sqk[@]}" | median); E2=$(printf '%s\n' "${ext_uns[@]}" | median)
C1=$(printf '%s\n' "${cat_sqk[@]}" | median); C2=$(printf '%s\n' "${cat_sfs[@]}" | median)
V1=$(printf '%s\n' "${ver[@]}" | median)
t "$SQK" cat "$IMG" "bigsrc/$BIG" >/dev/null; CAT_RSS=$RSS

# ---- mounts: every SquashFS reader on the one image, EROFS on its own ----
mkdir -p "$S/m/kernel" "$S/m/sqkfuse" "$S/m/sqfuse"
mount -t squashfs -o loop,ro "$IMG" "$S/m/kernel" || die "kernel squashfs mount failed"
"$SQKFUSE" "$IMG" "$S/m/sqkfuse" -o stats="$S/stats.json" || die "sqkfuse mount failed"
"$SQFUSE" "$IMG" "$S/m/sqfuse" || die "$L_FUSE mount failed"
declare -A PID NAME
# the daemons by their command lines (other jobs on the machine may run sqkfuse too)
PID[kernel]=""; PID[sqkfuse]=$(pgrep -n -f "^$SQKFUSE $IMG $S/m/sqkfuse ")
PID[sqfuse]=$(pgrep -n -f "^$SQFUSE $IMG $S/m/sqfuse\$")
L_KERN="kernel squashfs (Linux $(uname -r | cut -d- -f1))"
NAME[kernel]=$L_KERN; NAME[sqkfuse]=sqkfuse; NAME[sqfuse]=$L_FUSE
MOUNTS="sqkfuse kernel sqfuse"
# BENCH_READ_SQKFUSE_B=PATH: another sqkfuse (e.g. main's) on the same image, interleaved (A/B)
if [ -n "${BENCH_READ_SQKFUSE_B:-}" ]; then
	mkdir -p "$S/m/sqkfuseb"
	"$BENCH_READ_SQKFUSE_B" "$IMG" "$S/m/sqkfuseb" -o stats="$S/statsb.json" || die "$BENCH_READ_SQKFUSE_B mount failed"
	PID[sqkfuseb]=$(pgrep -n -f "^$BENCH_READ_SQKFUSE_B $IMG $S/m/sqkfuseb ")
	NAME[sqkfuseb]="sqkfuse B ($BENCH_READ_SQKFUSE_B)"
	MOUNTS="sqkfuseb $MOUNTS"
fi
EROFS_M=
if [ -z "$EROFS_WHY" ]; then
	mkdir -p "$S/m/erofs"
	if mount -t erofs -o loop,ro "$T/corpus.erofs" "$S/m/erofs" 2>"$S/err"; then
		EROFS_M=erofs PID[erofs]="" NAME[erofs]="kernel EROFS (Linux $(uname -r | cut -d- -f1), $(peer_label mkfs.erofs))"
		MOUNTS="$MOUNTS erofs"
	else EROFS_WHY="mount -t erofs failed: $(head -n 1 "$S/err")"; fi
fi
FIO_SECS=${BENCH_READ_FIO_SECS:-10}
fio_iops() {
	fio --name=r --filename="$1/bigsrc/$BIG" --rw=randread --bs=4k --ioengine=psync \
		--runtime="$FIO_SECS" --time_based --readonly --invalidate=1 --output-format=terse 2>/dev/null |
		awk -F';' '{print $8}'
}
# timed KIND MNT PID: "wall cpu" of one read (KIND tree_read or big_read) after dropping the
# page cache; cpu: the daemon (PID; none for the kernel's) plus the reading processes
timed() {
	local t0 t1 w u k
	drop; t0=$(cpu_ticks "$3")
	read -r w u k < <( { /usr/bin/time -f '%e %U %S' bash -c "$(declare -f "$1"); $1 $2" ; } 2>&1 | tail -n 1)
	t1=$(cpu_ticks "$3")
	echo "$w $(python3 -c "print('%.2f' % (($t1 - $t0) / $HZ + $u + $k))")"
}
# Rounds interleave the mounts (each round reads through every one in turn), so that the load
# of other jobs falls on all of them alike; the figures are the best of the rounds.
declare -A TREE TREECPU BIGT BIGCPU IOPS
for r in $(seq "$ROUNDS"); do
	for m in $MOUNTS; do
		echo "$(timed tree_read "$S/m/$m" "${PID[$m]}")" >>"$S/tree.$m"
		echo "$(timed big_read "$S/m/$m" "${PID[$m]}")" >>"$S/big.$m"
		drop; fio_iops "$S/m/$m" >>"$S/iops.$m"
	done
	log "round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
for m in $MOUNTS; do
	read -r TREE[$m] TREECPU[$m] <<<"$(best "$S/tree.$m")"
	read -r BIGT[$m] BIGCPU[$m] <<<"$(best "$S/big.$m")"
	IOPS[$m]=$(sort -n "$S/iops.$m" | tail -n 1)
done
FUSE_RSS=$(ps -o rss= -p "${PID[sqkfuse]}" | tr -d ' ')
fusermount3 -u "$S/m/sqkfuse"
[ -n "${BENCH_READ_SQKFUSE_B:-}" ] && fusermount3 -u "$S/m/sqkfuseb"
sleep 0.5
echo
echo "== squashkit read bench (sqk image $(stat -c %s "$IMG") bytes, $ROUNDS rounds; load after: $(cut -d' ' -f1-3 /proc/loadavg)) =="
f='%-48s %8s %8s %7s  %s\n'
printf "$f" "test (medians)" sqk peer ratio goal
printf "$f" "extract -j2 vs $L_UNSQ -p2 (s)" "$E1" "$E2" "$(ratio "$E1" "$E2")x" "<= 0.80x"
printf "$f" "cat $BIG vs $L_CAT (s)" "$C1" "$C2" "$(ratio "$C1" "$C2")x" "<= 1.00x"
printf "$f" "verify -j2 vs $L_UNSQ -p2 extraction (s)" "$V1" "$E2" "$(ratio "$V1" "$E2")x" "<= 1.00x"
echo
echo "mounts, best of $ROUNDS (wall s / CPU s of the daemon plus the readers; IOPS: fio randread 4 KiB psync, ${FIO_SECS} s):"
f='  %-58s %16s %16s %9s\n'
printf "$f" reader "tree tar" "large files" "4K IOPS"
for m in $MOUNTS; do
	printf "$f" "${NAME[$m]}" "${TREE[$m]}/${TREECPU[$m]}" \
		"$( [ "$m" = erofs ] && [ ! -f "$S/m/erofs/bigsrc/$BIG" ] && echo - || echo "${BIGT[$m]}/${BIGCPU[$m]}")" "${IOPS[$m]}"
done
echo "sqkfuse against each (wall ratio; IOPS ratio, higher is better):"
for m in $MOUNTS; do
	[ "$m" = sqkfuse ] && continue
	printf "$f" "vs ${NAME[$m]}" "$(ratio "${TREE[sqkfuse]}" "${TREE[$m]}")x" \
		"$(ratio "${BIGT[sqkfuse]}" "${BIGT[$m]}")x" "$(ratio "${IOPS[sqkfuse]}" "${IOPS[$m]}")x"
done
echo "goals: tree tar <= 1.0x kernel EROFS; large files (verified) <= 1.0x $L_FUSE (which verifies nothing); 4K IOPS >= 1.3x kernel squashfs"
if [ -n "$EROFS_M" ]; then
	echo "kernel EROFS: image $(stat -c %s "$T/corpus.erofs") bytes ($(peer_label mkfs.erofs) -zzstd,level=15 -C131072, built in $EROFS_MKS s;" \
		"the squashfs image: $(stat -c %s "$IMG")); tree tar $(ratio "${TREE[erofs]}" "${TREE[kernel]}")x kernel squashfs"
else
	echo "kernel EROFS: skipped: $EROFS_WHY"
fi
echo "peak RSS: sqk cat $((CAT_RSS / 1024)) MiB, sqkfuse $((FUSE_RSS / 1024)) MiB (default cache 64 MiB)"
echo "sqkfuse stats after the runs: $(cat "$S/stats.json" 2>/dev/null)"
[ -n "${BENCH_READ_SQKFUSE_B:-}" ] && echo "sqkfuse B stats after the runs: $(cat "$S/statsb.json" 2>/dev/null)"
}

# ---- verified reads (the default) against --no-verify, on an image with integrity data ----
# CPU is taken from wait4's rusage (exact sums, not 10 ms ticks: the runs are short).
# measure.py wall-cpu CMD...: "wall cpu" seconds of CMD (output discarded).
# measure.py fuse IMAGE MNT KIND [OPT...]: mounts IMAGE on MNT with sqkfuse -f OPT... (our own
# child: its CPU comes from wait4 at exit, after the unmount), runs the read (KIND tree: tar of
# MNT/tree; big: cat of MNT/bigsrc/*), unmounts; "wall cpu", wall of the read, cpu of the
# daemon plus the readers.
cat >"$S/measure.py" <<'PY'
import os, subprocess, sys, time
def run(argv, err):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    _, st, ru = os.wait4(p.pid, 0)
    if st:
        sys.exit("failed (%d): %s" % (st, " ".join(argv)))
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime
err = open(os.environ.get("MEASURE_ERR", "/dev/null"), "w")
if sys.argv[1] == "wall-cpu":
    w, c = run(sys.argv[2:], err)
else:
    fuse, img, mnt, kind = sys.argv[2:6]
    d = subprocess.Popen([fuse, img, mnt, "-f"] + sys.argv[6:], stderr=err)
    for _ in range(200):
        if os.path.ismount(mnt):
            break
        time.sleep(0.05)
    else:
        sys.exit("sqkfuse did not mount")
    read = ("cd %s/tree && tar -cf - . | cat >/dev/null" % mnt if kind == "tree"
            else "cat %s/bigsrc/* >/dev/null" % mnt)
    w, c = run(["bash", "-c", read], err)
    subprocess.run(["fusermount3", "-u", mnt], check=True)
    _, st, ru = os.wait4(d.pid, 0)
    if st:
        sys.exit("sqkfuse exited %d" % st)
    c += ru.ru_utime + ru.ru_stime
print("%.3f %.3f" % (w, c))
PY
tc() { MEASURE_ERR=$S/err python3 "$S/measure.py" wall-cpu "$@" || { cat "$S/err" >&2; die "failed: $*"; }; }
# fuse_run MODE KIND: a fresh mount of the verify image (MODE verify: the default; noverify:
# -o noverify), every chunk hashed anew; KIND tree or big.
fuse_run() {
	local opt=()
	[ "$1" = noverify ] && opt=(-o noverify)
	mkdir -p "$S/m/v"
	MEASURE_ERR=$S/err python3 "$S/measure.py" fuse "$SQKFUSE" "$T/v.sqsh" "$S/m/v" "$2" "${opt[@]}" ||
		{ cat "$S/err" >&2; die "sqkfuse ${opt[*]} $2 read failed"; }
}
# best FILE: of its "wall cpu" lines, the least wall and the least cpu
best() {
	echo "$(sort -n -k1,1 "$1" | head -n 1 | cut -d' ' -f1) $(sort -n -k2,2 "$1" | head -n 1 | cut -d' ' -f2)"
}

verify_case() {
	local vr=${BENCH_VERIFY_ROUNDS:-2} tree=${BENCH_VERIFY_TREE:-/usr/include /usr/share/doc} r m k d
	local -A RES
	mkdir -p "$S/vsrc/bigsrc" "$S/vsrc/tree"
	for d in $tree; do cp -a "$d" "$S/vsrc/tree/" || die "cannot copy $d"; done
	ls -S "$S/bigsrc" | head -n 2 | while read -r f; do cp "$S/bigsrc/$f" "$S/vsrc/bigsrc/"; done
	"$SQK" mkimage -q "$S/vsrc" "$T/v.sqsh" || die "sqk mkimage of the verify corpus failed"
	"$SQK" info "$T/v.sqsh" | grep -q '^root hash:' || die "the sqk image has no integrity data"
	local bigs=() f
	for f in "$S"/vsrc/bigsrc/*; do bigs+=("bigsrc/${f##*/}"); done
	log "verify case: image $(stat -c %s "$T/v.sqsh") bytes (tree $tree: $(du -sb "$S/vsrc/tree" | cut -f1) bytes; big files: $(du -sb "$S/vsrc/bigsrc" | cut -f1) bytes); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	for r in $(seq "$vr"); do
		# alternate the order of the two modes between rounds
		for m in $( [ $((r % 2)) = 1 ] && echo "verify noverify" || echo "noverify verify"); do
			local nv=()
			[ "$m" = noverify ] && nv=(--no-verify)
			tc "$SQK" cat "${nv[@]}" "$T/v.sqsh" "${bigs[@]}" >>"$S/r.cat.$m"
			rm -rf "$T/vx"
			tc "$SQK" extract -j 2 "${nv[@]}" "$T/v.sqsh" "$T/vx" tree >>"$S/r.extract.$m"
			rm -rf "$T/vx"
			fuse_run "$m" tree >>"$S/r.ftree.$m"
			fuse_run "$m" big >>"$S/r.fbig.$m"
		done
	done
	for k in cat extract ftree fbig; do
		for m in verify noverify; do
			RES[$k.$m]=$(best "$S/r.$k.$m")
		done
	done
	echo
	echo "== verified reads vs --no-verify (sqk-built image, best of $vr; load after: $(cut -d' ' -f1-3 /proc/loadavg)) =="
	printf '%-34s %15s %15s %7s %7s  %s\n' test "verified w/cpu" "no-verify w/cpu" wall cpu "goal (wall, cpu)"
	for k in extract cat ftree fbig; do
		local v n name
		read -r -a v <<<"${RES[$k.verify]}"
		read -r -a n <<<"${RES[$k.noverify]}"
		case $k in
		extract) name="sqk extract -j2 of the tree (s)";;
		cat) name="sqk cat of the big files (s)";;
		ftree) name="sqkfuse: tree tar (s)";;
		fbig) name="sqkfuse: big files (s)";;
		esac
		printf '%-34s %15s %15s %6sx %6sx  %s\n' "$name" "${v[0]}/${v[1]}" "${n[0]}/${n[1]}" \
			"$(ratio "${v[0]}" "${n[0]}")" "$(ratio "${v[1]}" "${n[1]}")" "<= 1.10x, <= 1.15x"
	done
}

has_case peer && peer_case
has_case verify && verify_case
exit 0
