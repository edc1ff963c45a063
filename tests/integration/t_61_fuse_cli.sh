#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqkfuse's command line: --version; meaningless -o values (threads=0, cache=0, ...) refused as
# usage errors naming them, with nothing mounted; the exit statuses sqkfuse(8) gives (a missing
# mount point 1, usage 2); `sqk umount` unmounts a sqkfuse mount (also one whose daemon died, and
# lazily a busy one), refuses what is not one (a directory, tmpfs, another FUSE file system)
# naming it, and as another user goes through fusermount3, which refuses a mount not theirs;
# the normal getxattr/listxattr probes (size 0, a buffer too small, a missing name) are not
# logged as errors.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature fuse
need_cmd python3 fusermount3 mountpoint getfattr setfattr setpriv squashfuse_ll
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch cli)
mkdir -p "$W/src/d" "$W/mnt"
echo hello >"$W/src/d/f"
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"x" * 300000)' "$W/src/big"
setfattr -n user.small -v 1 "$W/src/d/f"
setfattr -n user.big -v "$(head -c 300 /dev/zero | tr '\0' v)" "$W/src/d/f"
sqk_build -q "$W/src" "$W/img.sqsh"

# 1. --version: the version sqk prints, then libfuse's
ver=$("$SQK" --version | head -n 1) || fail "sqk --version exited $?"
run_capture version "$SQKFUSE" --version
[ "$RC" = 0 ] || fail "sqkfuse --version exited $RC"
[ "$(head -n 1 "$OUT_FILE")" = "sqkfuse ${ver#sqk }" ] || fail "sqkfuse --version: $(cat "$OUT_FILE")"
grep -q '^FUSE library version 3\.' "$OUT_FILE" || fail "sqkfuse --version names no libfuse: $(cat "$OUT_FILE")"
run_capture version2 "$SQK" mount --version
[ "$RC" = 0 ] && grep -qx "sqk mount ${ver#sqk }" "$OUT_FILE" || fail "sqk mount --version: $(cat "$OUT_FILE")"
info "$(head -n 1 "$OUT_FILE"), $(sed -n 2p "$OUT_FILE")"

# 2. meaningless or out-of-range values: usage errors naming the option, nothing mounted
# (no -f: a value that got through would mount and detach, and be caught by mountpoint)
expect_refused() { # WHAT STATUS PATTERN CMD...
	local what=$1 st=$2 pat=$3
	shift 3
	run_capture refused timeout 30 "$@"
	if mountpoint -q "$W/mnt"; then
		fusermount3 -u "$W/mnt"
		fail "$what: mounted (exit $RC)"
	fi
	[ "$RC" = "$st" ] || { show_err; fail "$what: exit $RC, expected $st"; }
	grep -q -- "$pat" "$ERR_FILE" || { show_err; fail "$what: the message does not name '$pat'"; }
}
for o in threads=0 threads=257 readahead=0 readahead=4097 cache=0 fill=65 max_threads=0 \
	timeout=0 stats= trace= subdir= cache_dir= threads=-1 offset=0x10; do
	expect_refused "-o $o" 2 "${o%%=*}=" "$SQKFUSE" "$W/img.sqsh" "$W/mnt" -o "$o"
done
expect_refused "sqk mount -o threads=0" 2 "threads=0" "$SQK" mount "$W/img.sqsh" "$W/mnt" -o threads=0
expect_refused "an unknown option" 2 "bogus" "$SQKFUSE" "$W/img.sqsh" "$W/mnt" -o bogus
expect_refused "no mount point" 2 "no mount point" "$SQKFUSE" "$W/img.sqsh"
expect_refused "no image" 2 "no image" "$SQKFUSE"
expect_refused "an extra argument" 2 "extra" "$SQKFUSE" "$W/img.sqsh" "$W/mnt" extra
# errors, not usage: as sqkfuse(8) says, exit 1
expect_refused "a missing mount point" 1 "$W/nowhere" "$SQKFUSE" "$W/img.sqsh" "$W/nowhere"
expect_refused "a mount point that is a file" 1 "not a directory" "$SQKFUSE" "$W/img.sqsh" "$W/img.sqsh"
expect_refused "a missing image" 1 "$W/none.sqsh" "$SQKFUSE" "$W/none.sqsh" "$W/mnt"
expect_refused "sqk mount, a missing mount point" 1 "$W/nowhere" "$SQK" mount "$W/img.sqsh" "$W/nowhere"
info "bad -o values, usage and missing paths refused with 2 / 1, nothing mounted"

# 3. sqk umount: a sqkfuse mount is unmounted, the daemon exits 0 having written its stats
fuse_mount "$W/img.sqsh" "$W/mnt" -o stats="$W/stats.json"
[ "$(cat "$W/mnt/d/f")" = hello ] || fail "the mount does not serve d/f"
run_capture umount bash -c 'cd "$1" && "$2" umount mnt/' _ "$W" "$SQK"
[ "$RC" = 0 ] || { show_err; fail "sqk umount (relative, trailing /) exited $RC"; }
mountpoint -q "$W/mnt" && fail "sqk umount exited 0 and the mount is still there"
wait "$FUSE_PID" || fail "sqkfuse exited $? after sqk umount"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))["read_requests"]' "$W/stats.json" ||
	fail "sqkfuse wrote no stats after sqk umount"

# ... also a mount whose daemon died (stat gives ENOTCONN there)
fuse_mount "$W/img.sqsh" "$W/mnt"
kill -9 "$FUSE_PID"
wait "$FUSE_PID" 2>/dev/null
run_capture umount_dead "$SQK" umount "$W/mnt"
[ "$RC" = 0 ] || { show_err; fail "sqk umount of a dead sqkfuse's mount exited $RC"; }
grep -q " $W/mnt " /proc/self/mountinfo && fail "the dead mount is still there"

# ... a busy one is refused (busy, exit 1), then detached with -z
fuse_mount "$W/img.sqsh" "$W/mnt"
exec 3<"$W/mnt/d/f"
run_capture umount_busy "$SQK" umount "$W/mnt"
[ "$RC" = 1 ] && grep -q busy "$ERR_FILE" || { show_err; fail "sqk umount of a busy mount: exit $RC"; }
mountpoint -q "$W/mnt" || fail "a busy mount was unmounted without -z"
run_capture umount_lazy "$SQK" umount -z "$W/mnt"
[ "$RC" = 0 ] || { show_err; fail "sqk umount -z exited $RC"; }
mountpoint -q "$W/mnt" && fail "sqk umount -z left the mount"
exec 3<&-
wait "$FUSE_PID" || fail "sqkfuse exited $? after sqk umount -z"
info "sqk umount: a live mount (daemon exits 0, stats written), a dead one, a busy one with -z"

# 4. what is not a sqkfuse mount is refused, naming it, and left mounted
run_capture not_mnt "$SQK" umount "$W/src"
[ "$RC" = 1 ] && grep -q "$W/src: not a mount point" "$ERR_FILE" ||
	{ show_err; fail "sqk umount of a plain directory: exit $RC"; }
mkdir -p "$W/tmpfs"
mount -t tmpfs none "$W/tmpfs" || fail "cannot mount a tmpfs"
_MOUNTS="$W/tmpfs $_MOUNTS"
run_capture tmpfs "$SQK" umount "$W/tmpfs"
[ "$RC" = 1 ] && grep -q "$W/tmpfs: a tmpfs mount, not a sqkfuse one" "$ERR_FILE" ||
	{ show_err; fail "sqk umount of a tmpfs: exit $RC"; }
mountpoint -q "$W/tmpfs" || fail "sqk umount unmounted a tmpfs"
umount "$W/tmpfs"
mount_fuse_ll "$W/img.sqsh" "$W/ll" || fail "squashfuse_ll did not mount"
run_capture other_fuse "$SQK" umount "$W/ll"
[ "$RC" = 1 ] && grep -q "$W/ll: a fuse.squashfuse_ll mount, not a sqkfuse one" "$ERR_FILE" ||
	{ show_err; fail "sqk umount of a squashfuse_ll mount: exit $RC"; }
mountpoint -q "$W/ll" || fail "sqk umount unmounted squashfuse_ll's mount"
fusermount3 -u "$W/ll"
# another user: fusermount3 -u, which refuses root's mount; it stays
fuse_mount "$W/img.sqsh" "$W/mnt"
run_capture as_nobody setpriv --reuid=65534 --regid=65534 --clear-groups "$SQK" umount "$W/mnt"
[ "$RC" != 0 ] || fail "sqk umount as nobody unmounted root's mount"
grep -q fusermount3 "$ERR_FILE" || { show_err; fail "sqk umount as nobody did not go through fusermount3"; }
mountpoint -q "$W/mnt" || fail "sqk umount as nobody unmounted root's mount"
info "refused: a directory, a tmpfs, a squashfuse_ll mount; as nobody: $(head -n 1 "$ERR_FILE")"

# 5. xattr probes are not errors: getfattr, size-0 and too-small calls, a missing name
getfattr -d --absolute-names "$W/mnt/d/f" >"$TMP/getfattr.out" 2>&1 || fail "getfattr -d failed"
grep -qx 'user.small="1"' "$TMP/getfattr.out" || fail "getfattr -d: $(cat "$TMP/getfattr.out")"
grep -qx "user.big=\"$(head -c 300 /dev/zero | tr '\0' v)\"" "$TMP/getfattr.out" ||
	fail "getfattr -d lacks user.big: $(cat "$TMP/getfattr.out")"
getfattr -n user.none "$W/mnt/d/f" >/dev/null 2>&1 && fail "getfattr of a missing name succeeded"
python3 - "$W/mnt/d/f" <<'PY' || fail "the xattr probes were not answered as the kernel expects"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
p = sys.argv[1].encode()
buf = ctypes.create_string_buffer(8)
def call(f, *a):
    ctypes.set_errno(0)
    return f(*a), ctypes.get_errno()
r = [call(libc.getxattr, p, b'user.big', None, 0), call(libc.getxattr, p, b'user.big', buf, 8),
     call(libc.listxattr, p, None, 0), call(libc.listxattr, p, buf, 8),
     call(libc.getxattr, p, b'user.none', None, 0)]
assert r[0][0] == 300, r
assert r[1] == (-1, errno.ERANGE), r
assert r[2][0] == len(b'user.small\0user.big\0'), r
assert r[3] == (-1, errno.ERANGE), r
assert r[4] == (-1, errno.ENODATA), r
for root, dirs, files in os.walk(os.path.dirname(sys.argv[1])):   # ls -l's probes too
    for n in dirs + files:
        try:
            os.getxattr(os.path.join(root, n), 'security.capability')
        except OSError as e:
            assert e.errno == errno.ENODATA, e
print("probes:", r)
PY
ls -lR "$W/mnt" >/dev/null
fuse_umount "$W/mnt"
if [ -s "$TMP/fuse.err" ]; then
	sed 's/^/    | /' "$TMP/fuse.err" >&2
	fail "sqkfuse logged lines during normal xattr probes"
fi
info "getfattr -d, size-0 and too-small getxattr/listxattr, missing names: nothing logged"
exit 0
