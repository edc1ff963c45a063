#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# squashkit benchmark: `sqk mkimage` against mksquashfs on the same corpus.
#
#   make bench                      # builds, then runs this with SQK set
#   SQK=/abs/build/bin/sqk sh tests/bench/bench.sh
#
# Environment:
#   SQK              path to the sqk binary (default: build/bin/sqk of this tree)
#   BENCH_ROUNDS     interleaved rounds per tool (default 3)
#   BENCH_JOBS       worker threads for both tools (default 2)
#   BENCH_ONLY_SQK=1 skip mksquashfs (quick iterations; no ratios)
#   BENCH_CORPUS=DIR use DIR as the corpus instead of copying one
#   BENCH_TMPDIR     where the corpus copy goes (default /var/tmp, on disk)
#   BENCH_TIMER      force gnu|bash|date timing (default: GNU time if usable)
#   BENCH_COLD       cold-cache rounds per tool after the warm ones (default 1 as root, else 0):
#                    the page cache is dropped before each run, so the corpus is read from disk
#   BENCH_LATENCY_US a latency-bound source: after the cold rounds, one cold round per tool
#                    reading the corpus through a FUSE view (slowfs.c) that answers every
#                    request after this many microseconds (default 100 as root with FUSE 3,
#                    else 0 = skipped), as a networked file system would
#   BENCH_APPEND=0   skip the append case (1% new files appended to the image)
#   BENCH_PEERS      auto|debian|anchors: which mksquashfs (see peers.sh; default the newest,
#                    4.7.5 in /opt/anchors, else Debian's); BENCH_BUILD_ANCHORS=1 builds them
#
# Corpus: /usr/include, /usr/share/doc and the Python standard library, copied
# as is into one scratch directory so both tools read identical inputs.
# Images are written to a tmpfs (mounted here when root, else a mktemp dir).
# Caches are warm: the corpus is read once before the rounds and caches are
# never dropped, so the comparison measures CPU work rather than disk noise.
# Exit status: 0 when every run succeeded (goals missed are reported, not
# fatal), 1 when a tool failed, 2 on a setup error.

set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SQK=${SQK:-$top/build/bin/sqk}
ROUNDS=${BENCH_ROUNDS:-3}
JOBS=${BENCH_JOBS:-2}
case ${BENCH_ONLY_SQK:-0} in ''|0|no|false) ONLY_SQK=0;; *) ONLY_SQK=1;; esac

die() { echo "bench: $*" >&2; exit 2; }
log() { echo "bench: $*"; }

case $ROUNDS in ''|*[!0-9]*|0) die "BENCH_ROUNDS must be a positive integer (got '$ROUNDS')";; esac
case $JOBS in ''|*[!0-9]*|0) die "BENCH_JOBS must be a positive integer (got '$JOBS')";; esac
[ -x "$SQK" ] || die "sqk binary not found or not executable: $SQK (run 'make' first)"
. "$here/peers.sh"
peers_init "$here"
if [ "$ONLY_SQK" = 0 ]; then
	peers_pick mksquashfs
	MKSQ=$(peer mksquashfs) MKSQ_L=$(peer_label mksquashfs)
	[ -n "$MKSQ" ] || die "mksquashfs not found (install squashfs-tools, or set BENCH_ONLY_SQK=1)"
else
	MKSQ= MKSQ_L=mksquashfs
fi
peers_pick unsquashfs
UNSQ=$(peer unsquashfs)
[ -n "$UNSQ" ] || log "unsquashfs not found: image entry counts will be skipped"
is_root=0; [ "$(id -u)" = 0 ] && is_root=1

# ---------------------------------------------------------------- scratch ---
scratch= imgdir= imgmnt=0 slowmnt=
cleanup() {
	trap - EXIT INT TERM HUP
	if [ "$imgmnt" = 1 ]; then umount "$imgdir" 2>/dev/null || umount -l "$imgdir" 2>/dev/null; fi
	[ -n "$imgdir" ] && rm -rf "$imgdir"
	if [ -n "$slowmnt" ]; then fusermount3 -u "$slowmnt" 2>/dev/null || umount -l "$slowmnt" 2>/dev/null; fi
	[ -n "$scratch" ] && rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

scratch=$(mktemp -d "${BENCH_TMPDIR:-/var/tmp}/sqk-bench.XXXXXX") || die "mktemp failed"
imgdir=$(mktemp -d "${TMPDIR:-/tmp}/sqk-bench-img.XXXXXX") || die "mktemp failed"
if [ "$is_root" = 1 ] && mount -t tmpfs -o mode=0700 sqk-bench "$imgdir" 2>/dev/null; then
	imgmnt=1
	log "images go to tmpfs $imgdir"
else
	log "images go to $imgdir (not a private tmpfs: not root or mount failed)"
fi
mkdir "$scratch/logs"

# ---------------------------------------------------------------- timing ----
# GNU time gives wall seconds and peak RSS (KiB). Install it when missing and
# root; otherwise fall back to bash's `time` (or date) and report RSS as n/a.
have_gnu_time() { /usr/bin/time -f '%e %M' -o /dev/null true >/dev/null 2>&1; }
if ! have_gnu_time && [ "$is_root" = 1 ] && command -v apt-get >/dev/null 2>&1; then
	log "installing GNU time via apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null 2>&1; }
fi
if [ -n "${BENCH_TIMER:-}" ]; then
	timer=$BENCH_TIMER
	case $timer in gnu|bash|date) ;; *) die "BENCH_TIMER must be gnu, bash or date";; esac
elif have_gnu_time; then
	timer=gnu
elif command -v bash >/dev/null 2>&1; then
	timer=bash; log "GNU time unavailable: using bash time, peak RSS n/a"
else
	timer=date; log "GNU time unavailable: using date, peak RSS n/a"
fi

# timed NAME CMD... : run CMD, leave "secs rss_kib|n/a cpu_secs|n/a" in $scratch/logs/NAME.t,
# its stdout+stderr in NAME.log; returns CMD's exit status.
timed() {
	name=$1; shift
	tf=$scratch/logs/$name.t lf=$scratch/logs/$name.log
	case $timer in
	gnu)
		# Wall time from date (ms resolution; %e only has 10 ms), peak RSS
		# from GNU time. On failure GNU time prepends a status line.
		t0=$(date +%s.%N)
		/usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" >"$lf" 2>&1; rc=$?
		t1=$(date +%s.%N)
		tail -n 1 "$tf" | awk -v a="$t0" -v b="$t1" \
			'{ printf "%.3f %s %.2f\n", b - a, $2, $3 + $4 }' >"$tf.x" && mv "$tf.x" "$tf"
		;;
	bash)
		TIMEFORMAT=%3R bash -c 'time "$@" >"$0" 2>&1' "$lf" "$@" 2>"$tf"; rc=$?
		echo "$(tail -n 1 "$tf") n/a n/a" >"$tf"
		;;
	date)
		t0=$(date +%s.%N); "$@" >"$lf" 2>&1; rc=$?; t1=$(date +%s.%N)
		echo "$t0 $t1" | awk '{ printf "%.3f n/a n/a\n", $2 - $1 }' >"$tf"
		;;
	esac
	return $rc
}

# ---------------------------------------------------------------- corpus ----
if [ -n "${BENCH_CORPUS:-}" ]; then
	[ -d "$BENCH_CORPUS" ] || die "BENCH_CORPUS is not a directory: $BENCH_CORPUS"
	corpus=$(cd "$BENCH_CORPUS" && pwd)
	log "using existing corpus $corpus"
else
	corpus=$scratch/corpus
	mkdir "$corpus"
	pystd=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])' 2>/dev/null)
	[ -n "$pystd" ] && [ -d "$pystd" ] || pystd=/usr/lib/python3.11
	for src in /usr/include /usr/share/doc "$pystd"; do
		if [ ! -d "$src" ]; then log "corpus source missing, skipped: $src"; continue; fi
		dst=$corpus/$(basename "$src")
		[ -e "$dst" ] && dst=$dst-$(echo "$src" | tr / _)
		log "copying $src"
		cp -a "$src" "$dst" 2>"$scratch/logs/cp.err" ||
			log "cp reported errors for $src (continuing): $(head -n 1 "$scratch/logs/cp.err")"
	done
fi

corpus_bytes=$(du -sb "$corpus" 2>/dev/null | cut -f1)
corpus_files=$(find "$corpus" -type f | wc -l)
corpus_entries=$(find "$corpus" -mindepth 1 | wc -l)
corpus_mib=$(awk -v b="$corpus_bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
log "corpus: $corpus"
log "corpus size $corpus_bytes bytes ($corpus_mib MiB apparent), $corpus_files regular files, $corpus_entries entries"

# Warm the page cache once. (GNU tar skips reading file data when the archive
# is /dev/null, so pipe the archive through cat instead.)
log "warming page cache (caches are NOT dropped between runs: warm-cache comparison)"
(cd "$corpus" && tar cf - . 2>/dev/null | cat >/dev/null)

# ---------------------------------------------------------------- rounds ----
sqk_img=$imgdir/sqk.sqsh mks_img=$imgdir/mksquashfs.sqsh
failed=0 RES= src=$corpus
run_sqk() {
	rm -f "$sqk_img"
	if timed "sqk.$1" "$SQK" mkimage -q -j "$JOBS" "$src" "$sqk_img"; then
		echo "$(cat "$scratch/logs/sqk.$1.t") $(stat -c %s "$sqk_img")" >>"$scratch/sqk$RES.res"
	else
		failed=1; rm -f "$sqk_img"; echo "FAILED n/a" >"$scratch/logs/sqk.$1.t"
		log "sqk mkimage failed in round $1 (exit $rc); output:"
		tail -n 20 "$scratch/logs/sqk.$1.log" | sed 's/^/  | /'
	fi
}
run_mks() {
	rm -f "$mks_img"
	if timed "mks.$1" "$MKSQ" "$src" "$mks_img" -comp zstd -processors "$JOBS" -noappend -quiet; then
		echo "$(cat "$scratch/logs/mks.$1.t") $(stat -c %s "$mks_img")" >>"$scratch/mks$RES.res"
	else
		failed=1; rm -f "$mks_img"; echo "FAILED n/a" >"$scratch/logs/mks.$1.t"
		log "$MKSQ_L failed in round $1 (exit $rc); output:"
		tail -n 20 "$scratch/logs/mks.$1.log" | sed 's/^/  | /'
	fi
}

: >"$scratch/sqk.res"; : >"$scratch/mks.res"
load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)
sync
r=1
while [ "$r" -le "$ROUNDS" ]; do
	# Alternate which tool goes first so neither always follows the other.
	if [ "$ONLY_SQK" = 1 ]; then
		run_sqk "$r"
	elif [ $((r % 2)) = 1 ]; then
		run_sqk "$r"; run_mks "$r"
	else
		run_mks "$r"; run_sqk "$r"
	fi
	line="round $r/$ROUNDS:"
	[ -s "$scratch/logs/sqk.$r.t" ] && line="$line sqk $(cut -d' ' -f1 "$scratch/logs/sqk.$r.t" | sed 's/[0-9]$/&s/')"
	[ "$ONLY_SQK" = 0 ] && [ -s "$scratch/logs/mks.$r.t" ] &&
		line="$line  $MKSQ_L $(cut -d' ' -f1 "$scratch/logs/mks.$r.t" | sed 's/[0-9]$/&s/')"
	log "$line"
	r=$((r + 1))
done

# Cold page cache: the corpus dropped from the page cache before each run (root only).
COLD=${BENCH_COLD:-$is_root}
case $COLD in ''|*[!0-9]*) die "BENCH_COLD must be a number (got '$COLD')";; esac
[ "$is_root" = 1 ] || COLD=0
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
RES=.cold
: >"$scratch/sqk.cold.res"; : >"$scratch/mks.cold.res"
r=1
while [ "$r" -le "$COLD" ]; do
	drop; run_sqk "cold$r"
	[ "$ONLY_SQK" = 0 ] && { drop; run_mks "cold$r"; }
	log "cold round $r/$COLD: sqk $(cut -d' ' -f1 "$scratch/logs/sqk.cold$r.t")s$( [ "$ONLY_SQK" = 0 ] && echo "  $MKSQ_L $(cut -d' ' -f1 "$scratch/logs/mks.cold$r.t")s")"
	r=$((r + 1))
done

# A latency-bound source: the corpus through slowfs, every FUSE request answered after
# $LAT_US microseconds, cold (root only: the mount and the dropped caches).
LAT_US=${BENCH_LATENCY_US:-}
if [ -z "$LAT_US" ]; then
	LAT_US=0
	[ "$is_root" = 1 ] && [ -c /dev/fuse ] && pkg-config --exists fuse3 2>/dev/null && LAT_US=100
fi
case $LAT_US in ''|*[!0-9]*) die "BENCH_LATENCY_US must be a number (got '$LAT_US')";; esac
[ "$is_root" = 1 ] || LAT_US=0
RES=.lat
: >"$scratch/sqk.lat.res"; : >"$scratch/mks.lat.res"
if [ "$LAT_US" -gt 0 ]; then
	if cc -O2 -o "$scratch/slowfs" "$here/slowfs.c" $(pkg-config --cflags --libs fuse3) \
		2>"$scratch/logs/slowfs.cc" && mkdir "$scratch/slowmnt" &&
		"$scratch/slowfs" "$corpus" "$scratch/slowmnt" -o "delay_us=$LAT_US"; then
		slowmnt=$scratch/slowmnt src=$slowmnt
		drop; run_sqk lat1
		[ "$ONLY_SQK" = 0 ] && { drop; run_mks lat1; }
		log "latency-bound round ($LAT_US us a request): sqk $(cut -d' ' -f1 "$scratch/logs/sqk.lat1.t")s$( [ "$ONLY_SQK" = 0 ] && echo "  $MKSQ_L $(cut -d' ' -f1 "$scratch/logs/mks.lat1.t")s")"
		src=$corpus
		fusermount3 -u "$slowmnt" 2>/dev/null && slowmnt=
	else
		log "latency-bound source skipped: slowfs could not be built or mounted ($(head -n 1 "$scratch/logs/slowfs.cc"))"
		LAT_US=0
	fi
fi
RES=
(cd "$corpus" && tar cf - . 2>/dev/null | cat >/dev/null) # warm again for what follows

# ---------------------------------------------------------------- stats -----
# Fields of *.res: wall_secs rss_kib cpu_secs size_bytes (one per good run).
median() { # column file decimals
	sort -n -k"$1","$1" "$2" | awk -v c="$1" -v d="$3" '$c != "n/a" { v[++n] = $c }
		END { if (n == 0) { print "n/a"; exit }
		      printf "%.*f\n", d, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
maxcol() { # column file
	awk -v c="$1" '$c != "n/a" { if ($c + 0 > m) m = $c + 0; n++ } END { if (n) print m; else print "n/a" }' "$2"
}
mib() { case $1 in n/a) echo n/a;; *) awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }';; esac; }
ratio() { # a b digits
	case "$1$2" in *n/a*) echo n/a; return;; esac
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.*f\n", d, a / b }'
}
goal() { # value limit
	case $1 in n/a) echo "n/a";; *) awk -v v="$1" -v l="$2" 'BEGIN { print (v + 0 <= l + 0) ? "met" : "NOT met" }';; esac
}
sizes() { awk '{ print $4 }' "$1" | sort -u | tr '\n' ' ' | sed 's/ $//'; }

sqk_t=$(median 1 "$scratch/sqk.res" 3); sqk_cpu=$(median 3 "$scratch/sqk.res" 2); sqk_rss=$(mib "$(maxcol 2 "$scratch/sqk.res")")
sqk_size=$(tail -n 1 "$scratch/sqk.res" | awk '{ print $4 }'); sqk_size=${sqk_size:-n/a}
[ "$(sizes "$scratch/sqk.res" | wc -w)" -gt 1 ] && log "WARNING: sqk image size varies between rounds: $(sizes "$scratch/sqk.res")"
if [ "$ONLY_SQK" = 0 ]; then
	mks_t=$(median 1 "$scratch/mks.res" 3); mks_cpu=$(median 3 "$scratch/mks.res" 2); mks_rss=$(mib "$(maxcol 2 "$scratch/mks.res")")
	mks_size=$(tail -n 1 "$scratch/mks.res" | awk '{ print $4 }'); mks_size=${mks_size:-n/a}
	[ "$(sizes "$scratch/mks.res" | wc -w)" -gt 1 ] && log "WARNING: $MKSQ_L image size varies between rounds: $(sizes "$scratch/mks.res")"
else
	mks_t=n/a mks_cpu=n/a mks_rss=n/a mks_size=n/a
fi
sqk_ver=$("$SQK" version 2>/dev/null | head -n 1)
x() { case $1 in n/a) echo n/a;; *) echo "${1}x";; esac; }
t_ratio=$(ratio "$sqk_t" "$mks_t" 2)
s_ratio=$(ratio "$sqk_size" "$mks_size" 3)

# Correctness: both images list the same entries (unsquashfs -l), and as many
# as the corpus has (plus the root itself).
count_entries() { # image listfile
	[ -f "$1" ] || { echo n/a; return; }
	"$UNSQ" -l "$1" 2>/dev/null | sed -n 's|^squashfs-root||p' | sort >"$2"
	[ -s "$2" ] && wc -l <"$2" | tr -d ' ' || echo n/a
}
sqk_n=n/a mks_n=n/a
if [ -n "$UNSQ" ]; then
	sqk_n=$(count_entries "$sqk_img" "$scratch/sqk.lst")
	[ "$ONLY_SQK" = 0 ] && mks_n=$(count_entries "$mks_img" "$scratch/mks.lst")
fi
expected=$((corpus_entries + 1))

echo
echo "== squashkit bench: sqk mkimage vs $MKSQ_L =="
echo "corpus        $corpus_mib MiB, $corpus_files files, $corpus_entries entries ($corpus)"
echo "setup         $ROUNDS interleaved rounds, $JOBS threads, zstd, default block size/level, warm page cache (not dropped)$( [ "$ONLY_SQK" = 1 ] && echo ', mksquashfs skipped' || echo "; $MKSQ_L -processors $JOBS")"
echo "load avg      before $load0, after $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a) (other load on the $(nproc 2>/dev/null || echo ?) CPUs skews wall times; CPU s is steadier)"
echo "sqk           $SQK${sqk_ver:+ ($sqk_ver)}"
[ "$ONLY_SQK" = 0 ] && echo "mksquashfs    $("$MKSQ" -version 2>/dev/null | head -n 1) ($MKSQ; $(peer_from mksquashfs))"
echo "entries       sqk $sqk_n, $MKSQ_L $mks_n (corpus + root: $expected)"
if [ "$sqk_n" != n/a ] && [ "$mks_n" != n/a ] && [ "$sqk_n" != "$mks_n" ]; then
	echo "WARNING: entry counts differ (sqk $sqk_n vs $MKSQ_L $mks_n); first differences:"
	diff "$scratch/mks.lst" "$scratch/sqk.lst" | grep '^[<>]' | head -n 10 | sed 's/^</  only mksquashfs:/; s/^>/  only sqk:/'
elif [ "$sqk_n" != n/a ] && [ "$sqk_n" != "$expected" ]; then
	echo "WARNING: sqk image has $sqk_n entries, corpus has $expected (including root)"
elif [ "$sqk_n" != n/a ] && [ "$mks_n" != n/a ] && ! cmp -s "$scratch/mks.lst" "$scratch/sqk.lst"; then
	echo "WARNING: same entry count but different paths; first differences:"
	diff "$scratch/mks.lst" "$scratch/sqk.lst" | grep '^[<>]' | head -n 10 | sed 's/^</  only mksquashfs:/; s/^>/  only sqk:/'
fi
# Issue 19's goals against the newest mksquashfs (4.7.5); the earlier ones against Debian's 4.5.1.
if [ "$(peer_from mksquashfs)" = anchor ]; then t_goal=0.85 s_goal=0.97; else t_goal=0.90 s_goal=0.99; fi
echo "time ratio $(x "$t_ratio") vs $MKSQ_L (goal <= ${t_goal}x): $(goal "$t_ratio" $t_goal)"
echo "size ratio $(x "$s_ratio") vs $MKSQ_L (goal <= ${s_goal}x): $(goal "$s_ratio" $s_goal)"
if [ "$COLD" -gt 0 ]; then
	cold_sqk=$(median 1 "$scratch/sqk.cold.res" 3)
	if [ "$ONLY_SQK" = 0 ]; then
		cold_mks=$(median 1 "$scratch/mks.cold.res" 3); cold_ratio=$(ratio "$cold_sqk" "$cold_mks" 2)
		echo "cold cache   sqk ${cold_sqk}s, $MKSQ_L ${cold_mks}s ($COLD run(s) each, page cache dropped before each): $(x "$cold_ratio") (goal <= ${t_goal}x): $(goal "$cold_ratio" $t_goal)"
	else
		echo "cold cache   sqk ${cold_sqk}s ($COLD run(s), page cache dropped before each)"
	fi
fi
if [ "$LAT_US" -gt 0 ]; then
	lat_sqk=$(median 1 "$scratch/sqk.lat.res" 3)
	if [ "$ONLY_SQK" = 0 ]; then
		lat_mks=$(median 1 "$scratch/mks.lat.res" 3); lat_ratio=$(ratio "$lat_sqk" "$lat_mks" 2)
		echo "latency-bound sqk ${lat_sqk}s, $MKSQ_L ${lat_mks}s (corpus through a FUSE view answering each request after $LAT_US us, cold): $(x "$lat_ratio")"
	else
		echo "latency-bound sqk ${lat_sqk}s (corpus through a FUSE view answering each request after $LAT_US us, cold)"
	fi
fi
echo "peak RSS sqk $sqk_rss, $MKSQ_L $mks_rss"
echo
printf '%-18s %9s %-24s %8s %10s %13s %8s\n' tool 'median s' 'runs s' 'CPU s' 'peak RSS' 'image bytes' entries
for t in sqk mks; do
	[ "$t" = mks ] && [ "$ONLY_SQK" = 1 ] && continue
	if [ "$t" = sqk ]; then n=sqk; md=$sqk_t; cp=$sqk_cpu; rs=$sqk_rss; sz=$sqk_size; en=$sqk_n
	else n=$MKSQ_L; md=$mks_t; cp=$mks_cpu; rs=$mks_rss; sz=$mks_size; en=$mks_n; fi
	runs=$(awk '{ print $1 }' "$scratch/$t.res" | tr '\n' ' ' | sed 's/ $//; s/ /,/g')
	printf '%-18s %9s %-24s %8s %10s %13s %8s\n' "$n" "$md" "${runs:-n/a}" "$cp" "$rs" "$sz" "$en"
done
[ "$ONLY_SQK" = 0 ] && printf '%-18s %9s %-24s %8s %10s %13s\n' "sqk/peer" "$(x "$t_ratio")" '' "$(x "$(ratio "$sqk_cpu" "$mks_cpu" 2)")" '' "$(x "$s_ratio")"

# ------------------------------------------------------- incremental rebuild ----
# The corpus with 1% of its files changed (a line appended; chosen with a fixed seed), built
# in full and with --reuse of the last round's image: time and size against the full build.
# BENCH_REUSE=0 skips it. A user's BENCH_CORPUS is copied first, never changed.
if [ "${BENCH_REUSE:-1}" != 0 ] && [ -f "$sqk_img" ]; then
	echo
	echo "== incremental rebuild: 1% of the files changed, sqk mkimage --reuse OLD =="
	rc_corpus=$corpus
	if [ -n "${BENCH_CORPUS:-}" ]; then
		rc_corpus=$scratch/corpus-copy
		cp -a "$corpus" "$rc_corpus" || die "cannot copy the corpus"
	fi
	cp "$sqk_img" "$imgdir/old.sqsh"
	nchanged=$(python3 - "$rc_corpus" <<'PY'
import os, random, sys
files = []
for r, d, f in os.walk(sys.argv[1]):
    d.sort()
    for x in sorted(f):
        p = os.path.join(r, x)
        if os.path.isfile(p) and not os.path.islink(p):
            files.append(p)
rnd = random.Random(11)
pick = rnd.sample(files, max(1, len(files) // 100))
for p in pick:
    with open(p, 'ab') as fh:
        fh.write(b'\nchanged by the squashkit bench\n')
print(len(pick))
PY
)
	rm -f "$imgdir/full.sqsh" "$imgdir/re.sqsh"
	timed rc.full "$SQK" mkimage -q -j "$JOBS" "$rc_corpus" "$imgdir/full.sqsh" || failed=1
	timed rc.reuse "$SQK" mkimage -j "$JOBS" --reuse "$imgdir/old.sqsh" "$rc_corpus" "$imgdir/re.sqsh" || failed=1
	if [ -f "$imgdir/full.sqsh" ] && [ -f "$imgdir/re.sqsh" ]; then
		ft=$(cut -d' ' -f1 "$scratch/logs/rc.full.t"); rt=$(cut -d' ' -f1 "$scratch/logs/rc.reuse.t")
		fs=$(stat -c %s "$imgdir/full.sqsh"); rs=$(stat -c %s "$imgdir/re.sqsh")
		tr_=$(ratio "$rt" "$ft" 3); sr_=$(ratio "$rs" "$fs" 4)
		echo "changed files $nchanged"
		echo "full build    $ft s, $fs bytes"
		echo "--reuse build $rt s, $rs bytes; $(grep '^reused' "$scratch/logs/rc.reuse.log" | sed 's/^reused *//; s/ of .*//') reused"
		echo "time ratio $(x "$tr_") (goal <= 0.15x): $(goal "$tr_" 0.15)"
		echo "size ratio $(x "$sr_") (goal <= 1.01x): $(goal "$sr_" 1.01)"
		"$UNSQ" -lls "$imgdir/full.sqsh" 2>/dev/null | sed 1,3d | sort >"$scratch/rc.full.lst"
		"$UNSQ" -lls "$imgdir/re.sqsh" 2>/dev/null | sed 1,3d | sort >"$scratch/rc.re.lst"
		cmp -s "$scratch/rc.full.lst" "$scratch/rc.re.lst" && echo "listings     same tree" ||
			{ echo "WARNING: the rebuilt image lists another tree"; failed=1; }
	fi
fi

# ---------------------------------------------------------------- append ----
# 1% of the corpus's files (every 100th in walk order, a line added so their content is new)
# appended to the last round's image, as mksquashfs appends (sqk mkimage NEW IMAGE): time
# against the full build's median. BENCH_APPEND=0 skips it.
if [ "${BENCH_APPEND:-1}" != 0 ] && [ -f "$sqk_img" ]; then
	echo
	echo "== append: 1% new files added to the image, sqk mkimage NEW IMAGE =="
	app_new=$scratch/append-new
	napp=$(python3 - "$corpus" "$app_new" <<'PY'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
files = []
for r, d, f in os.walk(src):
    d.sort()
    for x in sorted(f):
        p = os.path.join(r, x)
        if os.path.isfile(p) and not os.path.islink(p):
            files.append(p)
pick = files[::100]
for p in pick:
    q = os.path.join(dst, os.path.relpath(p, src))
    os.makedirs(os.path.dirname(q), exist_ok=True)
    with open(p, 'rb') as i, open(q, 'wb') as o:
        o.write(i.read() + b'\nnew in the squashkit bench\n')
print(len(pick))
PY
)
	cp "$sqk_img" "$imgdir/app.sqsh"
	if timed app "$SQK" mkimage -j "$JOBS" "$app_new" "$imgdir/app.sqsh"; then
		at=$(cut -d' ' -f1 "$scratch/logs/app.t"); ac=$(cut -d' ' -f3 "$scratch/logs/app.t")
		ar_=$(ratio "$at" "$sqk_t" 3)
		echo "new files     $napp ($(du -sb "$app_new" | cut -f1) bytes)"
		echo "full build    $sqk_t s, CPU $sqk_cpu s (median of the rounds)"
		echo "append        $at s, CPU $ac s; $(grep '^appended' "$scratch/logs/app.log" | sed 's/^appended to [^:]*: //')"
		echo "time ratio $(x "$ar_") (goal <= 0.2x): $(goal "$ar_" 0.2); CPU ratio $(x "$(ratio "$ac" "$sqk_cpu" 3)")"
	else
		failed=1
		log "the append failed: $(tail -n 1 "$scratch/logs/app.log")"
	fi
	rm -f "$imgdir/app.sqsh"
fi

[ "$failed" = 0 ] || { log "at least one run failed"; exit 1; }
exit 0
