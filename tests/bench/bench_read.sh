#!/bin/bash
# squashkit read-side benchmark, one run side by side with the peer tools:
#   extract   sqk extract -j 2 vs unsquashfs -p 2 (same image, to tmpfs)      goal <= 0.80x
#   cat       sqk cat of the largest file vs sqfscat                          goal <= 1.00x
#   verify    sqk verify -j 2 vs unsquashfs -p 2 extraction                   goal <= 1.00x
#   mount     sqkfuse vs kernel loop mount vs squashfuse_ll, page cache dropped before each run:
#             whole-tree tar (goal <= 1.0x kernel), large files sequentially (goal <= 0.6x
#             squashfuse_ll), fio random 4 KiB psync IOPS (goal >= kernel), one decompression
#             per block (stats=), peak RSS; sqkfuse -o verify overhead (goal <= 15%).
# The image: mksquashfs -comp zstd of the bench corpus plus a few large binaries, on tmpfs.
# Environment: SQK (default build/bin/sqk), BENCH_CORPUS=DIR (reuse a corpus), BENCH_ROUNDS (3).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SQK=${SQK:-$HERE/../../build/bin/sqk}
SQKFUSE=$(dirname "$SQK")/sqkfuse
ROUNDS=${BENCH_ROUNDS:-3}
die() { echo "bench_read: $*" >&2; exit 2; }
log() { echo "bench_read: $*"; }
[ "$(id -u)" = 0 ] || die "needs root (mounts, drop_caches)"
[ -x "$SQK" ] && [ -x "$SQKFUSE" ] || die "build first (make)"
for c in mksquashfs unsquashfs sqfscat squashfuse_ll fio /usr/bin/time; do
	command -v "$c" >/dev/null 2>&1 && continue
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio time squashfs-tools-ng \
		squashfuse squashfs-tools >/dev/null 2>&1
	command -v "$c" >/dev/null 2>&1 || die "$c missing"
done

S=$(mktemp -d /var/tmp/sqk-bench-read.XXXXXX)
T=$S/tmpfs
mkdir -p "$T" "$S/m"
mount -t tmpfs -o size=8g tmpfs "$T" || die "cannot mount tmpfs"
cleanup() {
	for m in "$S"/m/*; do mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m"; }; done
	# the daemons and the loop device let go of the image shortly after their unmount
	for _ in $(seq 25); do umount "$T" 2>/dev/null && break; sleep 0.2; done
	mountpoint -q "$T" && umount -l "$T"
	rm -rf "$S"
}
trap cleanup EXIT INT TERM

# ---- corpus and image ----
if [ -n "${BENCH_CORPUS:-}" ]; then
	C=$BENCH_CORPUS
else
	C=$S/corpus
	mkdir -p "$C"
	cp -a /usr/include "$C/include"
	cp -a /usr/share/doc "$C/doc"
	cp -a "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" "$C/pylib"
fi
mkdir -p "$S/bigsrc"
find /usr/lib /usr/bin -xdev -type f -size +5M 2>/dev/null | xargs -r ls -S | head -n 4 |
	while read -r f; do cp "$f" "$S/bigsrc/"; done
IMG=$T/corpus.sqsh
mksquashfs "$C" "$S/bigsrc" "$IMG" -comp zstd -noappend -quiet -no-progress >/dev/null ||
	die "mksquashfs failed"
BIG=$(cd "$S/bigsrc" && ls -S | head -n 1)
log "image $(stat -c %s "$IMG") bytes; large files: $(ls "$S/bigsrc" | tr '\n' ' ')"

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

# ---- extract, cat, verify ----
ext_sqk=(); ext_uns=(); cat_sqk=(); cat_sfs=(); ver=()
for r in $(seq "$ROUNDS"); do
	rm -rf "$T/x" "$T/y"
	ext_sqk+=("$(t "$SQK" extract -j 2 "$IMG" "$T/x")"); rm -rf "$T/x"
	ext_uns+=("$(t unsquashfs -p 2 -d "$T/y" "$IMG")"); rm -rf "$T/y"
	cat_sqk+=("$(t "$SQK" cat "$IMG" "bigsrc/$BIG")")
	cat_sfs+=("$(t sqfscat "$IMG" "bigsrc/$BIG")")
	ver+=("$(t "$SQK" verify -j 2 "$IMG")")
done
E1=$(printf '%s\n' "${ext_sqk[@]}" | median); E2=$(printf '%s\n' "${ext_uns[@]}" | median)
C1=$(printf '%s\n' "${cat_sqk[@]}" | median); C2=$(printf '%s\n' "${cat_sfs[@]}" | median)
V1=$(printf '%s\n' "${ver[@]}" | median)
t "$SQK" cat "$IMG" "bigsrc/$BIG" >/dev/null; CAT_RSS=$RSS

# ---- mounts ----
mount -t squashfs -o loop,ro "$IMG" "$S/m/kernel" 2>/dev/null || { mkdir -p "$S/m/kernel"; mount -t squashfs -o loop,ro "$IMG" "$S/m/kernel"; }
mkdir -p "$S/m/sqkfuse" "$S/m/sqkfusev" "$S/m/sqfuse"
"$SQKFUSE" "$IMG" "$S/m/sqkfuse" -o stats="$S/stats.json" || die "sqkfuse mount failed"
squashfuse_ll "$IMG" "$S/m/sqfuse" || die "squashfuse_ll mount failed"
tree_read() { (cd "$1" && tar -cf - . | cat >/dev/null); }
big_read() { for f in "$1"/bigsrc/* "$1"/*; do [ -f "$f" ] && cat "$f" >/dev/null; done; }
fio_iops() {
	fio --name=r --filename="$1/bigsrc/$BIG" --rw=randread --bs=4k --ioengine=psync \
		--runtime=10 --time_based --readonly --invalidate=1 --output-format=terse 2>/dev/null |
		awk -F';' '{print $8}'
}
# cpu_ticks PID: user+system clock ticks used so far by a daemon (0 for the kernel mount)
cpu_ticks() { if [ -n "$1" ]; then awk '{print $14 + $15}' "/proc/$1/stat"; else echo 0; fi; }
declare -A TREE BIGT IOPS BIGCPU PID
PID[kernel]=""; PID[sqkfuse]=$(pgrep -n -x sqkfuse); PID[sqfuse]=$(pgrep -n -x squashfuse_ll)
HZ=$(getconf CLK_TCK)
for m in kernel sqkfuse sqfuse; do
	a=(); b=(); c=()
	for r in $(seq "$ROUNDS"); do
		drop; a+=("$( { /usr/bin/time -f %e bash -c "$(declare -f tree_read); tree_read $S/m/$m" ; } 2>&1 | tail -n 1)")
		drop; t0=$(cpu_ticks "${PID[$m]}")
		read -r w u k < <( { /usr/bin/time -f '%e %U %S' bash -c "$(declare -f big_read); big_read $S/m/$m" ; } 2>&1 | tail -n 1)
		t1=$(cpu_ticks "${PID[$m]}")
		b+=("$w")
		# CPU seconds of the whole read: the daemon plus the reading processes
		c+=("$(python3 -c "print('%.2f' % (($t1 - $t0) / $HZ + $u + $k))")")
	done
	TREE[$m]=$(printf '%s\n' "${a[@]}" | median)
	BIGT[$m]=$(printf '%s\n' "${b[@]}" | median)
	BIGCPU[$m]=$(printf '%s\n' "${c[@]}" | median)
	drop; IOPS[$m]=$(fio_iops "$S/m/$m")
done
FUSE_RSS=$(ps -o rss= -C sqkfuse | sort -n | tail -n 1)
fusermount3 -u "$S/m/sqkfuse"
sleep 0.5
# verified reads: sequential large files with and without -o verify (fresh mounts, cold cache)
# (an image with integrity data: the large files packed by sqk mkimage)
"$SQK" mkimage -q "$S/bigsrc" "$T/big.sqsh" || die "sqk mkimage of the large files failed"
"$SQKFUSE" "$T/big.sqsh" "$S/m/sqkfuse" || die "sqkfuse remount failed"
"$SQKFUSE" "$T/big.sqsh" "$S/m/sqkfusev" -o verify || die "sqkfuse -o verify mount failed"
nv=(); vv=()
for r in $(seq "$ROUNDS"); do
	drop; nv+=("$( { /usr/bin/time -f %e bash -c "$(declare -f big_read); big_read $S/m/sqkfuse" ; } 2>&1 | tail -n 1)")
	drop; vv+=("$( { /usr/bin/time -f %e bash -c "$(declare -f big_read); big_read $S/m/sqkfusev" ; } 2>&1 | tail -n 1)")
done
NV=$(printf '%s\n' "${nv[@]}" | median); VV=$(printf '%s\n' "${vv[@]}" | median)

echo
echo "== squashkit read bench (image $(stat -c %s "$IMG") bytes, $ROUNDS rounds, medians) =="
printf '%-34s %8s %8s %7s  %s\n' test sqk peer ratio goal
printf '%-34s %8s %8s %7s  %s\n' "extract -j2 vs unsquashfs -p2 (s)" "$E1" "$E2" "$(ratio "$E1" "$E2")x" "<= 0.80x"
printf '%-34s %8s %8s %7s  %s\n' "cat $BIG vs sqfscat (s)" "$C1" "$C2" "$(ratio "$C1" "$C2")x" "<= 1.00x"
printf '%-34s %8s %8s %7s  %s\n' "verify -j2 vs unsquashfs -p2 (s)" "$V1" "$E2" "$(ratio "$V1" "$E2")x" "<= 1.00x"
printf '%-34s %8s %8s %7s  %s\n' "mount: tree tar vs kernel (s)" "${TREE[sqkfuse]}" "${TREE[kernel]}" "$(ratio "${TREE[sqkfuse]}" "${TREE[kernel]}")x" "<= 1.0x"
printf '%-34s %8s %8s %7s  %s\n' "mount: large files vs squashfuse_ll" "${BIGT[sqkfuse]}" "${BIGT[sqfuse]}" "$(ratio "${BIGT[sqkfuse]}" "${BIGT[sqfuse]}")x" "<= 0.6x"
printf '%-34s %8s %8s %7s  %s\n' "mount: random 4K IOPS vs kernel" "${IOPS[sqkfuse]}" "${IOPS[kernel]}" "$(ratio "${IOPS[sqkfuse]}" "${IOPS[kernel]}")x" ">= 1.0x"
printf '%-34s %8s %8s %7s  %s\n' "mount -o verify vs plain (s)" "$VV" "$NV" "$(ratio "$VV" "$NV")x" "<= 1.15x"
echo "also: tree tar squashfuse_ll ${TREE[sqfuse]} s; large files kernel ${BIGT[kernel]} s; IOPS squashfuse_ll ${IOPS[sqfuse]}"
NCPU=$(nproc)
echo "large files, CPU seconds (daemon + readers): sqkfuse ${BIGCPU[sqkfuse]}, squashfuse_ll ${BIGCPU[sqfuse]};" \
	"on $NCPU cores sqkfuse cannot take less than $(python3 -c "print('%.2f' % (${BIGCPU[sqkfuse]} / $NCPU))") s" \
	"($(ratio "$(python3 -c "print(${BIGCPU[sqkfuse]} / $NCPU)")" "${BIGT[sqfuse]}")x squashfuse_ll)"
echo "peak RSS: sqk cat $((CAT_RSS / 1024)) MiB, sqkfuse $((FUSE_RSS / 1024)) MiB (default cache 64 MiB)"
echo "sqkfuse stats after the runs: $(cat "$S/stats.json" 2>/dev/null)"
