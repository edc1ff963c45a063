# SPDX-License-Identifier: BSD-2-Clause
# Shared helpers for the integration tests; sourced by every t_*.sh (bash).
#
# Environment (set by run.sh): SQK (required), SQK_SAN (optional), TMP (a private scratch dir
# for this test; it is removed by run.sh). A test fails by exiting non-zero with a message,
# skips by printing "skipped: WHY" and exiting 77.

set -u
IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TREECMP="python3 $IT_DIR/treecmp.py"
MKTREE="bash $IT_DIR/mktree.sh"

_OWN_TMP=""
if [ -z "${TMP:-}" ]; then      # run standalone: a scratch dir of our own, removed on exit
	TMP=$(mktemp -d /var/tmp/sqk-it.XXXXXX)
	_OWN_TMP=$TMP
fi
export TMP
mkdir -p "$TMP"

_MOUNTS=""       # mount points to unmount on exit (newest first)
_FUSE_PIDS=""    # squashfuse processes we started
_CLEANUPS=""     # extra commands to run on exit

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "skipped: $*"
	exit 77
}

info() {
	echo "  $*"
}

# Run a command; fail with its output when it exits non-zero.
must() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" | tail -n 30 >&2
		fail "command failed: $*"
	fi
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "required command '$c' not installed"
	done
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (uid is $(id -u))"
}

# Root, a loop device and kernel squashfs support, for loop mounts.
need_kernel_mount() {
	need_root
	[ -e /dev/loop-control ] || ls /dev/loop[0-9]* >/dev/null 2>&1 ||
		skip "no /dev/loop devices"
	if ! grep -qw squashfs /proc/filesystems; then
		modprobe squashfs 2>/dev/null || true
		grep -qw squashfs /proc/filesystems || skip "kernel has no squashfs support"
	fi
}

# peer_squashfs_tools: sets MKSQUASHFS and UNSQUASHFS to the newest squashfs-tools here (4.7.x
# in /opt/anchors when built there, else Debian's) and SQFS_TOOLS_VERSION to its "major.minor".
peer_squashfs_tools() {
	local d=/opt/anchors/squashfs-tools/bin
	if [ -x "$d/mksquashfs" ] && [ -x "$d/unsquashfs" ]; then
		MKSQUASHFS=$d/mksquashfs UNSQUASHFS=$d/unsquashfs
	else
		need_cmd mksquashfs unsquashfs
		MKSQUASHFS=$(command -v mksquashfs) UNSQUASHFS=$(command -v unsquashfs)
	fi
	SQFS_TOOLS_VERSION=$("$MKSQUASHFS" -version 2>/dev/null |
		sed -n '1s/.*version \([0-9]*\.[0-9]*\).*/\1/p')
	export MKSQUASHFS UNSQUASHFS SQFS_TOOLS_VERSION
}

# need_squashfs_tools MAJOR.MINOR: skips unless the peer squashfs-tools (peer_squashfs_tools) is
# that version or later (the options a test compares came with it).
need_squashfs_tools() {
	local want=$1 have=${SQFS_TOOLS_VERSION:-0.0}
	[ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n 1)" = "$want" ] ||
		skip "needs squashfs-tools $want or later as the oracle (found ${SQFS_TOOLS_VERSION:-none};" \
			"scripts/install-deps.sh test builds it when ../shared/anchors is there)"
}

need_sqk() {
	[ -n "${SQK:-}" ] || fail "SQK is not set"
	[ -x "$SQK" ] || fail "SQK=$SQK is not an executable file"
}

# have_feature NAME: true when $SQK was built with the optional feature NAME (fuse, remote, tar,
# lzo, lz4), as the second line of `sqk --version` lists them ("features: +fuse -remote ...").
have_feature() {
	"$SQK" --version 2>/dev/null | grep -q "^features:.* +$1\( \|\$\)"
}

# need_feature NAME...: skips unless $SQK was built with every NAME ("built with HAVE_NAME=0").
need_feature() {
	local f
	need_sqk
	for f in "$@"; do
		have_feature "$f" || skip "built with HAVE_$(printf '%s' "$f" | tr '[:lower:]' '[:upper:]')=0"
	done
}

# A fresh directory under this test's scratch area.
scratch() {
	local d
	d=$(mktemp -d "$TMP/${1:-w}.XXXXXX") || fail "mktemp failed in $TMP"
	chmod 755 "$d"
	echo "$d"
}

at_exit() {
	_CLEANUPS="$1
$_CLEANUPS"
}

_cleanup() {
	local rc=$? m p
	set +e
	for p in $_FUSE_PIDS; do
		kill "$p" 2>/dev/null
	done
	for m in $_MOUNTS; do
		if mountpoint -q "$m" 2>/dev/null; then
			umount "$m" 2>/dev/null || fusermount -u "$m" 2>/dev/null ||
				umount -l "$m" 2>/dev/null
		fi
	done
	if [ -n "$_CLEANUPS" ]; then
		eval "$_CLEANUPS"
	fi
	if [ -n "$_OWN_TMP" ] && [ -z "${KEEP:-}" ]; then
		cd / && rm -rf "$_OWN_TMP"
	fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Loop-mount IMAGE read-only on DIR with the kernel driver; unmounted on exit.
mount_sq() {
	local img=$1 dir=$2 err
	mkdir -p "$dir"
	if ! err=$(mount -t squashfs -o loop,ro "$img" "$dir" 2>&1); then
		dmesg 2>/dev/null | tail -n 5 >&2
		fail "kernel mount of $img failed: $err"
	fi
	_MOUNTS="$dir $_MOUNTS"
}

umount_sq() {
	local dir=$1
	umount "$dir" 2>/dev/null || fusermount -u "$dir" 2>/dev/null || umount -l "$dir" ||
		fail "cannot unmount $dir"
}

# A listing of a directory (names, sizes, hashes) for "unchanged" checks.
dir_state() {
	local d=$1
	(cd "$d" && find . -mindepth 1 -maxdepth 1 -printf '%P %y %s\n' | LC_ALL=C sort &&
		find . -mindepth 1 -maxdepth 1 -type f -exec md5sum {} + | LC_ALL=C sort)
}

# Assert that directory DIR is in the state recorded earlier in file STATE.
assert_dir_state() {
	local d=$1 state=$2 what=$3 now
	now=$(dir_state "$d")
	if [ "$now" != "$(cat "$state")" ]; then
		echo "--- before" >&2
		cat "$state" >&2
		echo "--- after" >&2
		printf '%s\n' "$now" >&2
		fail "$what: destination directory $d changed"
	fi
}

# run_capture NAME CMD...: runs CMD with stdout/stderr in $TMP/NAME.out/.err, sets RC.
run_capture() {
	local name=$1
	shift
	RC=0
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || RC=$?
	OUT_FILE=$TMP/$name.out
	ERR_FILE=$TMP/$name.err
}

show_err() {
	echo "  stderr was:" >&2
	sed 's/^/    | /' "$ERR_FILE" | head -n 20 >&2
}

# sqk_t NAME ARGS...: run_capture NAME of `$SQK ARGS` within 180 s (a hang is a failure); sets
# MS and SECS (the time it took).
sqk_t() {
	local name=$1 t0
	shift
	t0=$(date +%s%N)
	run_capture "$name" timeout 180 "$SQK" "$@"
	MS=$((($(date +%s%N) - t0) / 1000000))
	SECS=$((MS / 1000))
	[ "$RC" != 124 ] || { show_err; fail "sqk $* did not finish within 180 s"; }
}

# sqk_ok NAME ARGS...: as sqk_t, and it must exit 0.
sqk_ok() {
	sqk_t "$@"
	[ "$RC" = 0 ] || { show_err; fail "sqk ${*:2} exited $RC"; }
}

# Build IMAGE from SOURCE... with sqk; fail (showing stderr) when sqk fails.
sqk_build() {
	local rc=0
	"$SQK" mkimage "$@" >"$TMP/build.out" 2>"$TMP/build.err" || rc=$?
	if [ "$rc" != 0 ]; then
		sed 's/^/    | /' "$TMP/build.err" | tail -n 30 >&2
		fail "sqk mkimage $* exited $rc"
	fi
}

# Check the magic and that bytes_used in the superblock matches the file (padded to 4K), followed
# by nothing or (exactly) squashkit integrity data: digests, zero padding, 128-byte trailer,
# checked here independently (chunk digests and root digest). With --no-checksums as second
# argument, the image must have no integrity data.
check_superblock() {
	local img=$1 mode=${2:-}
	python3 - "$img" "$mode" <<'EOF' || fail "superblock check failed for $img"
import hashlib, struct, sys, os
p = sys.argv[1]
mode = sys.argv[2]
with open(p, 'rb') as f:
    sb = f.read(96)
if len(sb) < 96 or sb[:4] != b'hsqs':
    sys.exit("bad magic in %s" % p)
(inodes, mkfs, bsize, frags, comp, blog, flags, ids, vmaj, vmin) = struct.unpack_from('<IIIIHHHHHH', sb, 4)
used = struct.unpack_from('<Q', sb, 40)[0]
size = os.path.getsize(p)
if (vmaj, vmin) != (4, 0):
    sys.exit("version %d.%d" % (vmaj, vmin))
if 1 << blog != bsize:
    sys.exit("block_log %d does not match block_size %d" % (blog, bsize))
if used > size:
    sys.exit("bytes_used %d > file size %d" % (used, size))
if size % 4096 != 0:
    sys.exit("image size %d is not padded to 4 KiB" % size)
padded = (used + 4095) // 4096 * 4096
with open(p, 'rb') as f:
    f.seek(size - 128)
    tr = f.read(128)
if tr[120:] != b'SQKINTG1':
    # no integrity data (--no-checksums, or another tool's image): only the 4K padding
    if size - used >= 4096:
        sys.exit("image has %d bytes after bytes_used %d" % (size - used, used))
    sys.exit(0)
if mode == '--no-checksums':
    sys.exit("image built with --no-checksums has integrity data")
if tr[:8] != b'SQKINTG1' or any(tr[72:120]):
    sys.exit("bad integrity trailer")
ver, cs, covered, hashes_at, n = struct.unpack_from('<IIQQQ', tr, 8)
if ver != 1 or cs < 4096 or cs > 1 << 20 or cs & (cs - 1):
    sys.exit("bad integrity trailer version %d / chunk size %d" % (ver, cs))
hint_end = covered
if covered != padded:
    # the fast checksum block (common/integrity.h) ends the covered bytes: an XXH3-64 of every
    # chunk before it, checked here with libxxhash through ctypes
    with open(p, 'rb') as f:
        f.seek(covered - 32)
        foot = f.read(32)
    if foot[24:] == b'SQKFAST1':
        import ctypes
        fn, flen, fver, falg = struct.unpack_from('<QQII', foot, 0)
        at = covered - flen
        if (fver != 1 or falg != 1 or flen % 4096 or flen == 0 or at < padded
                or fn != at // cs or flen != (8 * fn + 32 + 4095) // 4096 * 4096):
            sys.exit("fast checksum block: n %d len %d version %d algorithm %d, covered %d, "
                     "padded image %d, chunk size %d" % (fn, flen, fver, falg, covered, padded, cs))
        with open(p, 'rb') as f:
            data = f.read(covered)
        if any(data[at + 8 * fn:covered - 32]):
            sys.exit("fast checksum block: padding is not zero")
        xxh3 = ctypes.CDLL('libxxhash.so.0').XXH3_64bits
        xxh3.restype = ctypes.c_uint64
        xxh3.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        for k in range(fn):
            if xxh3(data[k * cs:(k + 1) * cs], cs) != struct.unpack_from('<Q', data, at + 8 * k)[0]:
                sys.exit("fast checksum of chunk %d does not match" % k)
        hint_end = at
if hint_end != padded:
    # a prefetch hint block (common/hint.h) may lie between the padded image and the digests
    # (or the fast checksums)
    with open(p, 'rb') as f:
        f.seek(hint_end - 32)
        foot = f.read(32)
    hn, hver, hlen, hz = struct.unpack_from('<IIQQ', foot, 0)
    if (foot[24:] != b'SQKHINT1' or hver != 1 or hz or hlen != hint_end - padded or hlen % 4096
            or hlen > 65536 or 16 * hn > hlen - 32):
        sys.exit("integrity trailer: covered %d, padded image %d, and no valid hint block between"
                 % (hint_end, padded))
if hashes_at != covered or n != (covered + cs - 1) // cs:
    sys.exit("integrity trailer: covered %d hashes_at %d nchunks %d, padded image %d"
             % (covered, hashes_at, n, padded))
end = covered + 32 * n + 128
if size != (end + 4095) // 4096 * 4096:
    sys.exit("file size %d does not match the integrity data (%d)" % (size, end))
with open(p, 'rb') as f:
    data = f.read()
digests = data[covered:covered + 32 * n]
if any(data[covered + 32 * n:size - 128]):
    sys.exit("integrity padding is not zero")
for k in range(n):
    if hashlib.sha256(data[k * cs:min((k + 1) * cs, covered)]).digest() != digests[32 * k:32 * k + 32]:
        sys.exit("integrity digest of chunk %d does not match" % k)
if hashlib.sha256(tr[:40] + bytes(32) + tr[72:] + digests).digest() != tr[40:72]:
    sys.exit("integrity root digest does not match")
EOF
}

# Superblock field readers.
sb_u32() {
	python3 -c 'import struct,sys; f=open(sys.argv[1],"rb"); f.seek(int(sys.argv[2])); print(struct.unpack("<I", f.read(4))[0])' "$1" "$2"
}
sb_u16() {
	python3 -c 'import struct,sys; f=open(sys.argv[1],"rb"); f.seek(int(sys.argv[2])); print(struct.unpack("<H", f.read(2))[0])' "$1" "$2"
}

# Compressor ids in the superblock (offset 20).
comp_id() {
	case $1 in gzip) echo 1 ;; lzma) echo 2 ;; lzo) echo 3 ;; xz) echo 4 ;; lz4) echo 5 ;;
	zstd) echo 6 ;; *) echo 0 ;; esac
}

# assert_comp IMAGE NAME: the superblock names compressor NAME.
assert_comp() {
	local got
	got=$(sb_u16 "$1" 20)
	[ "$got" = "$(comp_id "$2")" ] || fail "$1: compressor id $got, expected $2 ($(comp_id "$2"))"
}

# unsquashfs IMAGE into DIR (must not exist); fail on any error or warning.
extract() {
	local img=$1 dir=$2 rc=0
	unsquashfs -n -d "$dir" "$img" >"$TMP/unsq.out" 2>"$TMP/unsq.err" || rc=$?
	if [ $rc != 0 ] || [ -s "$TMP/unsq.err" ]; then
		sed 's/^/    | /' "$TMP/unsq.err" | head -n 30 >&2
		fail "unsquashfs -d $dir $img failed (exit $rc)"
	fi
}

# treecmp A B [opts]: fail with the differences.
tree_equal() {
	local what=$1
	shift
	if ! $TREECMP "$@" >"$TMP/treecmp.out" 2>&1; then
		head -n 80 "$TMP/treecmp.out" >&2
		fail "$what: trees differ ($(tail -n 1 "$TMP/treecmp.out"))"
	fi
	info "$what: $(tail -n 1 "$TMP/treecmp.out")"
}

# Full round trip of the rich tree: build with sqk (extra args: sqk options), check the
# superblock, compare kernel mount, unsquashfs extraction and (if usable) squashfuse_ll.
kernel_roundtrip() {
	local comp=$1 W img t0 t1
	shift
	need_kernel_mount
	need_sqk
	need_cmd unsquashfs python3
	W=$(scratch rt)
	$MKTREE "$W/src" || fail "mktree failed"
	img=$W/out/image.sqsh
	mkdir -p "$W/out"
	t0=$(date +%s.%N)
	sqk_build "$@" "$W/src" "$img"
	t1=$(date +%s.%N)
	info "build took $(python3 -c "print(round($t1 - $t0, 2))")s, image $(stat -c %s "$img") bytes"
	[ -s "$TMP/build.out" ] || fail "no summary printed on success"
	if [ -s "$TMP/build.err" ]; then
		info "note: the successful build wrote to stderr:"
		sed 's/^/    | /' "$TMP/build.err" | head -n 10
	fi
	[ "$(ls -A "$W/out")" = image.sqsh ] || fail "output dir holds more than the image: $(ls -A "$W/out")"
	check_superblock "$img"
	assert_comp "$img" "$comp"
	[ "$(sb_u32 "$img" 12)" = 131072 ] || fail "default block size is $(sb_u32 "$img" 12), expected 128K"
	# the 5 GiB sparse file and ~15 MiB of data must not take more than ~40 MiB
	[ "$(stat -c %s "$img")" -lt 41943040 ] || fail "image is $(stat -c %s "$img") bytes: holes not stored sparse?"

	mount_sq "$img" "$W/mnt"
	tree_equal "kernel mount" "$W/src" "$W/mnt"
	umount_sq "$W/mnt"

	extract "$img" "$W/x"
	tree_equal "unsquashfs" "$W/src" "$W/x"
	rm -rf "$W/x"

	squashfuse_equal "$img" "$W/src" "$W/fmnt"
}

# squashfuse_equal IMAGE SRC DIR: compares IMAGE mounted by squashfuse_ll on DIR with SRC. A
# missing squashfuse_ll (an install dependency) or a failed mount fails the test; only a machine
# without /dev/fuse skips the comparison, with an info line.
squashfuse_equal() {
	if [ ! -e /dev/fuse ]; then
		info "no /dev/fuse here: the squashfuse_ll comparison did not run"
		return 0
	fi
	command -v squashfuse_ll >/dev/null ||
		fail "squashfuse_ll is not installed (scripts/install-deps.sh installs squashfuse)"
	if ! mount_fuse_ll "$1" "$3"; then
		sed 's/^/    | /' "$TMP/fuse.log" | tail -n 10 >&2
		fail "squashfuse_ll could not mount $1"
	fi
	# squashfuse 0.1.105 swaps the trusted./security. prefixes and fails on empty
	# values (ENODATA): its xattrs are not compared
	tree_equal "squashfuse_ll" "$2" "$3" --no-xattrs
	umount_sq "$3"
}

mount_fuse_ll() {
	local img=$1 dir=$2 i
	mkdir -p "$dir"
	squashfuse_ll -f "$img" "$dir" >"$TMP/fuse.log" 2>&1 &
	_FUSE_PIDS="$! $_FUSE_PIDS"
	_MOUNTS="$dir $_MOUNTS"
	for i in $(seq 50); do
		mountpoint -q "$dir" && return 0
		sleep 0.1
	done
	return 1
}

# fuse_mount IMAGE DIR [OPTS]: sqkfuse ($SQKFUSE) in the foreground, in the background of this
# test, stderr in $TMP/fuse.err (truncated at each mount); sets FUSE_PID; unmounted on exit.
fuse_mount() {
	local img=$1 dir=$2 i
	shift 2
	mkdir -p "$dir"
	: >"$TMP/fuse.err"
	"$SQKFUSE" "$img" "$dir" -f "$@" 2>>"$TMP/fuse.err" &
	FUSE_PID=$!
	_FUSE_PIDS="$FUSE_PID $_FUSE_PIDS"
	_MOUNTS="$dir $_MOUNTS"
	for i in $(seq 100); do
		mountpoint -q "$dir" && return 0
		kill -0 "$FUSE_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$TMP/fuse.err" >&2
	fail "sqkfuse did not mount $img on $dir"
}

# fuse_umount DIR: unmounts a fuse_mount and checks that sqkfuse exited 0.
fuse_umount() {
	fusermount3 -u "$1" || fail "fusermount3 -u $1 failed"
	wait "$FUSE_PID" || fail "sqkfuse exited $? after unmount"
}

# ---- HTTP helpers for the remote-image tests (t_8x_remote*) --------------------------------

# A free TCP port on 127.0.0.1 (in the network namespace of $NETNS_EXEC when set).
free_port() {
	${NETNS_EXEC:-} python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# http_serve DIR: a real nginx serving DIR on 127.0.0.1 at a free port, in the foreground in
# the background of this test (stopped at exit). Its files are in $HTTP_DIR (nginx.conf,
# error.log, access.log, pid, temp dirs). Sets HTTP_PORT, HTTP_URL (http://127.0.0.1:PORT),
# HTTP_PID and HTTP_LOG (the access log, see http_log_ranges). Optional environment:
#   NETNS_EXEC        command prefix to run nginx and the readiness check in a network
#                     namespace (e.g. "ip netns exec NS" or "nsenter --net=/run/netns/NS")
#   HTTP_SERVER_CONF  extra directives inside the server block, e.g. a location that demands
#                     a header:  location /private/ { if ($http_authorization != "Bearer X")
#                     { return 403; } }
#   HTTP_TLS_CERT, HTTP_TLS_KEY  serve https with this certificate and key (see tls_certs);
#                     HTTP_URL is then https://127.0.0.1:PORT; HTTP_H2=1 also offers HTTP/2
# Skips when nginx is not installed.
http_serve() {
	local root=$1 nginx=/usr/sbin/nginx d try port i ok scheme=http listen_opts="" tls_conf="" k=
	[ -x "$nginx" ] || nginx=$(command -v nginx 2>/dev/null) || skip "nginx is not installed"
	[ -x "$nginx" ] || skip "nginx is not installed"
	need_cmd curl python3
	root=$(cd "$root" && pwd) || fail "http_serve: no directory $1"
	d=$(mktemp -d "$TMP/nginx.XXXXXX") || fail "mktemp failed in $TMP"
	mkdir -p "$d/tmp/body" "$d/tmp/proxy" "$d/tmp/fastcgi" "$d/tmp/uwsgi" "$d/tmp/scgi"
	if [ -n "${HTTP_TLS_CERT:-}" ]; then
		scheme=https k=-k
		listen_opts=" ssl${HTTP_H2:+ http2}"
		tls_conf="ssl_certificate $HTTP_TLS_CERT; ssl_certificate_key $HTTP_TLS_KEY;"
	fi
	for try in 1 2 3 4 5 6 7 8; do
		port=$(free_port) || fail "cannot pick a free port"
		cat >"$d/nginx.conf" <<CONF
user root;
worker_processes 1;
error_log $d/error.log info;
pid $d/nginx.pid;
events { worker_connections 1024; }
http {
	default_type application/octet-stream;
	log_format sqk '\$request_method \$request_uri \$server_protocol range=\$http_range \$status \$body_bytes_sent';
	access_log $d/access.log sqk;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 65;
	etag on;
	server_tokens off;
	server {
		listen 127.0.0.1:$port$listen_opts;
		server_name localhost;
		$tls_conf
		root $root;
		location / { }
		${HTTP_SERVER_CONF:-}
	}
}
CONF
		: >"$d/error.log"
		: >"$d/access.log"
		${NETNS_EXEC:-} "$nginx" -e "$d/error.log" -p "$d" -c "$d/nginx.conf" \
			-g 'daemon off;' >>"$d/nginx.out" 2>&1 &
		HTTP_PID=$!
		ok=0
		for i in $(seq 100); do
			if ${NETNS_EXEC:-} curl -s $k -o /dev/null --max-time 2 "$scheme://127.0.0.1:$port/"; then
				ok=1
				break
			fi
			kill -0 "$HTTP_PID" 2>/dev/null || break
			sleep 0.05
		done
		if [ $ok = 1 ] && kill -0 "$HTTP_PID" 2>/dev/null; then
			break
		fi
		kill "$HTTP_PID" 2>/dev/null
		wait "$HTTP_PID" 2>/dev/null
		if grep -q 'Address already in use' "$d/error.log" "$d/nginx.out" 2>/dev/null; then
			info "http_serve: port $port taken; trying another"
			continue
		fi
		cat "$d/nginx.out" "$d/error.log" >&2
		fail "nginx did not start (config $d/nginx.conf)"
	done
	[ $ok = 1 ] || fail "nginx could not bind a free port in $try tries"
	at_exit "http_stop $HTTP_PID"
	HTTP_PORT=$port
	HTTP_URL=$scheme://127.0.0.1:$port
	HTTP_DIR=$d
	HTTP_LOG=$d/access.log
}

# http_stop PID: stops an nginx started by http_serve (fast shutdown, then KILL after 5 s).
http_stop() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# http_restart: starts nginx again, after http_stop, with the configuration and port http_serve
# gave it (HTTP_PID set again).
http_restart() {
	local nginx i
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	"$nginx" -e "$HTTP_DIR/error.log" -p "$HTTP_DIR" -c "$HTTP_DIR/nginx.conf" \
		-g 'daemon off;' >>"$HTTP_DIR/nginx.out" 2>&1 &
	HTTP_PID=$!
	at_exit "http_stop $HTTP_PID"
	for i in $(seq 100); do
		curl -s -o /dev/null --max-time 2 "$HTTP_URL/" && return 0
		sleep 0.05
	done
	fail "nginx did not start again on port $HTTP_PORT"
}

# rand_tree DIR SEED: 4 directories d0..d3 of 12 files f00..f11 of 512 KiB of random
# (incompressible) bytes, the same for the same SEED: a 24 MiB tree for remote images.
rand_tree() {
	python3 - "$1" "$2" <<'PY' || fail "cannot make the source tree $1"
import os, random, sys
r = random.Random(int(sys.argv[2]))
for d in range(4):
    p = os.path.join(sys.argv[1], "d%d" % d)
    os.makedirs(p)
    for f in range(12):
        with open(os.path.join(p, "f%02d" % f), "wb") as o:
            o.write(r.randbytes(512 << 10))
PY
}

# dir_bytes DIR: the bytes the regular files under DIR take on disk (a cache folder's size; its
# unit files have holes).
dir_bytes() { find "$1" -type f -printf '%b\n' 2>/dev/null | awk '{ s += $1 * 512 } END { print s + 0 }'; }

# wait_log PATTERN SECONDS [FILE]: until FILE (sqkfuse's stderr, $TMP/fuse.err) has a line
# matching PATTERN; fails after SECONDS.
wait_log() {
	local i f=${3:-$TMP/fuse.err}
	for i in $(seq $(( $2 * 10 ))); do
		grep -q -- "$1" "$f" && return 0
		sleep 0.1
	done
	cat "$f" >&2
	fail "no log line matching '$1' within $2 s"
}

# http_log_mark: the number of lines in the access log now (for http_log_ranges MARK).
http_log_mark() {
	wc -l <"$HTTP_LOG" | tr -d ' '
}

# http_log_ranges [MARK]: the requests nginx served (after line MARK of the access log), one a
# line: METHOD URI PROTOCOL range=RANGE STATUS BODY_BYTES ("range=-" without a Range header).
# nginx logs a request when it ends: call this after the client is done.
http_log_ranges() {
	tail -n +"$(( ${1:-0} + 1 ))" "$HTTP_LOG"
}

# http_log_bytes [MARK]: the number of requests and body bytes nginx sent after MARK: "N BYTES".
http_log_bytes() {
	http_log_ranges "${1:-0}" | awk '{ n++; b += $NF } END { printf "%d %d\n", n, b }'
}

# proxy_start: tests/integration/faultproxy.py in front of $HTTP_PORT (in $NETNS_EXEC's
# namespace when set); stopped at exit. Sets PROXY_PORT, PROXY_URL, PROXY_PID, PROXY_LOG
# (its stderr: one line per request). A fault mode is chosen per URL: $PROXY_URL/_f/MODE/PATH.
proxy_start() {
	local pf i
	need_cmd python3
	[ -n "${HTTP_PORT:-}" ] || fail "proxy_start: call http_serve first"
	pf=$(mktemp -u "$TMP/proxy.port.XXXXXX")
	PROXY_LOG=$pf.log
	${NETNS_EXEC:-} python3 "$IT_DIR/faultproxy.py" --upstream "127.0.0.1:$HTTP_PORT" \
		--port-file "$pf" 2>"$PROXY_LOG" &
	PROXY_PID=$!
	at_exit "kill $PROXY_PID 2>/dev/null; wait $PROXY_PID 2>/dev/null"
	for i in $(seq 100); do
		[ -s "$pf" ] && break
		kill -0 "$PROXY_PID" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$pf" ] || { cat "$PROXY_LOG" >&2; fail "faultproxy.py did not start"; }
	PROXY_PORT=$(cat "$pf")
	PROXY_URL=http://127.0.0.1:$PROXY_PORT
	${NETNS_EXEC:-} curl -sf -o /dev/null --max-time 5 "$PROXY_URL/_stats" ||
		{ cat "$PROXY_LOG" >&2; fail "faultproxy.py does not answer on port $PROXY_PORT"; }
}

# proxy_stats [MODE]: the proxy's /_stats JSON (all modes), or one MODE's counter object.
proxy_stats() {
	if [ $# = 0 ]; then
		${NETNS_EXEC:-} curl -sf --max-time 5 "$PROXY_URL/_stats"
	else
		${NETNS_EXEC:-} curl -sf --max-time 5 "$PROXY_URL/_stats" |
			python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin).get(sys.argv[1], {"requests": 0, "faults": 0, "bytes": 0, "items": {}})))' "$1"
	fi
}

# json_get FILE KEY: prints the top-level KEY of the JSON object in FILE (fails when missing).
json_get() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j[sys.argv[2]])' "$1" "$2" ||
		fail "no key '$2' in $1: $(head -c 2000 "$1")"
}

# stat_get FILE KEY: the count KEY of the JSON object in FILE (a stats= file); fails unless it
# is one.
stat_get() {
	local v
	v=$(json_get "$1" "$2")
	case $v in '' | *[!0-9]*) fail "$1: $2 is '$v', not a count" ;; esac
	echo "$v"
}

# proxy_arm MODE / proxy_disarm MODE: switch the faults of a "gated" MODE on / off.
proxy_arm() {
	${NETNS_EXEC:-} curl -sf --max-time 5 -o /dev/null "$PROXY_URL/_arm/$1" ||
		fail "faultproxy: cannot arm $1"
}
proxy_disarm() {
	${NETNS_EXEC:-} curl -sf --max-time 5 -o /dev/null "$PROXY_URL/_disarm/$1" ||
		fail "faultproxy: cannot disarm $1"
}

# tls_certs DIR: a throwaway CA (DIR/ca.pem) and a server certificate for IP 127.0.0.1 signed
# by it (DIR/server.pem, DIR/server.key), for http_serve with HTTP_TLS_CERT/HTTP_TLS_KEY.
# Returns non-zero (with a message) when openssl is missing or fails.
tls_certs() {
	local d=$1
	command -v openssl >/dev/null || { info "openssl not installed"; return 1; }
	mkdir -p "$d"
	printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$d/ext.cnf"
	{
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$d/ca.key" -out "$d/ca.pem" -days 2 -subj /CN=squashkit-test-ca \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$d/server.key" -out "$d/server.csr" -subj /CN=127.0.0.1 &&
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
			-CAcreateserial -out "$d/server.pem" -days 2 -extfile "$d/ext.cnf"
	} >"$d/openssl.log" 2>&1 || { tail -n 5 "$d/openssl.log" >&2; info "openssl failed"; return 1; }
}

# ---- a slow link: delay on the loopback of a network namespace (t_86) ----------------------

# ns_add_delay NS MS: every packet on lo of network namespace NS waits MS milliseconds (so TCP
# round trips there take 2*MS). Tries `tc qdisc add dev lo root netem delay MSms` first (after
# `modprobe sch_netem`); where the kernel has no netem, tests/netdelay.py (a python3 nfnetlink
# client in NS) holds the packets that iptables queues to it (raw PREROUTING -i lo -j NFQUEUE
# --queue-bypass, a rule inside NS); iptables is installed with apt-get when missing (as root).
# Sets NS_DELAY_HOW (netem or nfqueue), NS_DELAY_DESC (a phrase for messages) and, for nfqueue,
# NS_DELAY_PID (the helper; its stderr in $NS_DELAY_LOG). The qdisc or the rule and the helper
# are removed at exit, before the namespace when the caller registered `ip netns del NS` with
# at_exit first (the helper also exits by itself within a second of this shell). Returns 1,
# with the reasons in NS_DELAY_WHY, when neither way works. With NS_DELAY_MATCH (iptables match
# arguments, e.g. "-p tcp -m multiport --ports 8080") only the packets it matches are delayed
# (NFQUEUE only: netem here delays everything).
NETDELAY_PY=$(cd "$IT_DIR/.." && pwd)/netdelay.py
ns_add_delay() {
	local ns=$1 ms=$2 q=0 why ready pid i ipt match=${NS_DELAY_MATCH:-}
	NS_DELAY_HOW="" NS_DELAY_DESC="" NS_DELAY_WHY="" NS_DELAY_PID="" NS_DELAY_LOG=""
	case $ms in '' | *[!0-9]*) fail "ns_add_delay: bad delay '$ms'" ;; esac
	if [ -n "$match" ]; then
		why="netem: not for some packets only (NS_DELAY_MATCH)"
	elif command -v tc >/dev/null 2>&1; then
		if ip netns exec "$ns" tc qdisc add dev lo root netem delay "${ms}ms" 2>"$TMP/netem.err" || {
			modprobe sch_netem 2>/dev/null
			ip netns exec "$ns" tc qdisc add dev lo root netem delay "${ms}ms" 2>"$TMP/netem.err"
		}; then
			at_exit "ip netns exec $ns tc qdisc del dev lo root 2>/dev/null"
			NS_DELAY_HOW=netem
			NS_DELAY_DESC="netem delay ${ms}ms on lo"
			return 0
		fi
		why="netem: $(head -n 1 "$TMP/netem.err")"
	else
		why="netem: tc (iproute2) is not installed"
	fi
	# NFQUEUE
	if ! command -v iptables >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		info "no netem ($why): installing iptables for the NFQUEUE delay"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iptables \
			>"$TMP/apt.log" 2>&1 || {
			apt-get update -qq &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iptables
		} >>"$TMP/apt.log" 2>&1
	fi
	if ! command -v iptables >/dev/null 2>&1; then
		NS_DELAY_WHY="$why; NFQUEUE: iptables is not installed (and could not be installed)"
		return 1
	fi
	ready=$(mktemp -u "$TMP/netdelay.XXXXXX")
	NS_DELAY_LOG=$ready.log
	ip netns exec "$ns" python3 "$NETDELAY_PY" "$q" "$ms" "$ready" $$ 2>"$NS_DELAY_LOG" &
	pid=$!
	at_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	for i in $(seq 200); do
		[ -e "$ready" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -e "$ready" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		NS_DELAY_WHY="$why; NFQUEUE: the helper did not start: $(tail -n 1 "$NS_DELAY_LOG")"
		return 1
	fi
	: >"$TMP/iptables.err"
	for ipt in iptables iptables-legacy; do
		command -v "$ipt" >/dev/null 2>&1 || continue
		if ip netns exec "$ns" "$ipt" -t raw -A PREROUTING -i lo $match -j NFQUEUE \
			--queue-num "$q" --queue-bypass 2>>"$TMP/iptables.err"; then
			# (newest first: the rule goes before the helper)
			at_exit "ip netns exec $ns $ipt -t raw -D PREROUTING -i lo $match -j NFQUEUE --queue-num $q --queue-bypass 2>/dev/null"
			NS_DELAY_HOW=nfqueue
			NS_DELAY_DESC="NFQUEUE ${ms}ms each way on lo${match:+ ($match)} ($ipt, tests/netdelay.py; no netem)"
			NS_DELAY_PID=$pid
			return 0
		fi
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	NS_DELAY_WHY="$why; NFQUEUE: the iptables rule was refused: $(tail -n 1 "$TMP/iptables.err")"
	return 1
}

# ---- short passes with the sanitized build ($SQK_SAN) --------------------------------------

SAN_REPORT_RE='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|ThreadSanitizer'

# san_start: before a pass with the ASan/UBSan build. Returns 1 (with an info line) when SQK_SAN
# is not set; fails when it is set but sqk or sqkfuse is not there. Sets SQKFUSE_SAN (the sqkfuse
# beside $SQK_SAN) and exports ASAN_OPTIONS/UBSAN_OPTIONS (only the sanitized binaries read
# them) so that every report is fatal: the binary prints it on stderr and exits non-zero (leaks
# too, at exit).
san_start() {
	if [ -z "${SQK_SAN:-}" ]; then
		info "SQK_SAN not set: no pass with the sanitized build"
		return 1
	fi
	SQKFUSE_SAN=$(dirname "$SQK_SAN")/sqkfuse
	[ -x "$SQK_SAN" ] || fail "SQK_SAN=$SQK_SAN is not an executable file"
	[ -x "$SQKFUSE_SAN" ] || fail "no sanitized sqkfuse at $SQKFUSE_SAN (beside SQK_SAN)"
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
}

# san_clean FILE WHAT: fails (showing it) when FILE, a sanitized binary's stderr, holds a report.
san_clean() {
	if grep -Eq "$SAN_REPORT_RE" "$1"; then
		grep -E -A 30 "$SAN_REPORT_RE" "$1" | head -n 80 >&2
		fail "$2: sanitizer report"
	fi
}

# san_sqk NAME ARGS...: run_capture of `$SQK_SAN ARGS` within 120 s; fails on a sanitizer report
# or a hang. The caller checks RC.
san_sqk() {
	local name=$1
	shift
	run_capture "$name" timeout -k 5 120 "$SQK_SAN" "$@"
	san_clean "$ERR_FILE" "sanitized sqk $*"
	[ "$RC" != 124 ] && [ "$RC" != 137 ] || { show_err; fail "sanitized sqk $* did not finish within 120 s"; }
}

# san_fuse_umount DIR: as fuse_umount for a fuse_mount of $SQKFUSE_SAN: unmounts, then fails on
# a sanitizer report in its stderr or an exit status other than 0.
san_fuse_umount() {
	local rc=0
	fusermount3 -u "$1" || fail "fusermount3 -u $1 failed"
	wait "$FUSE_PID" || rc=$?
	san_clean "$TMP/fuse.err" "sanitized sqkfuse"
	[ $rc = 0 ] || { tail -n 20 "$TMP/fuse.err" >&2; fail "sanitized sqkfuse exited $rc after unmount"; }
}
