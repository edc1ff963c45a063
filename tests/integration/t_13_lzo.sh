#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# LZO (compressor id 3). The rich tree built with `sqk mkimage -c lzo` (lzo1x_999, level 8, no
# options block): the kernel (when it has CONFIG_SQUASHFS_LZO), unsquashfs, squashfuse_ll,
# sqkfuse and sqk extract all reproduce it; sqk info names the compressor and its options. The
# other algorithms and levels, spelled as mksquashfs does (-comp, -Xalgorithm,
# -Xcompression-level) and as sqk does: the options block bytes mksquashfs would write, read back
# by unsquashfs and sqk. Images of `mksquashfs -comp lzo` (default and -Xalgorithm lzo1x_1) read
# by sqk extract/cat/verify, and data blocks byte-identical to mksquashfs's. An image patched to
# legacy lzma (id 2) or an unknown id: every reader names the compressor and exits non-zero.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature lzo
need_cmd mksquashfs unsquashfs python3
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}

W=$(scratch lzo)
$MKTREE "$W/src" || fail "mktree failed"
$MKTREE --small --no-sparse "$W/small" || fail "mktree --small failed"

# opts_block IMAGE: the options block as "FLAGBIT HEX" ("0" alone when there is none).
opts_block() {
	python3 - "$1" <<'EOF'
import struct, sys
b = open(sys.argv[1], 'rb').read(200)
flags = struct.unpack_from('<H', b, 24)[0]
if not flags & 0x400:
    print('0')
else:
    hdr = struct.unpack_from('<H', b, 96)[0]
    print('1', b[96:98 + (hdr & 0x7FFF)].hex())
EOF
}

# info_expect IMAGE ALGORITHM LEVEL: sqk info (text and JSON) names lzo and its options.
info_expect() {
	local img=$1 alg=$2 lvl=$3
	run_capture info "$SQK" info "$img"
	[ "$RC" = 0 ] || { show_err; fail "sqk info $img exited $RC"; }
	# the level only for lzo1x_999 (the other algorithms take none); defaults when no block
	local opts="algorithm=$alg"
	[ "$alg" = lzo1x_999 ] && opts="$opts level=$lvl"
	grep -qxE "compressor: *lzo \($opts(; not stored: the defaults)?\)" "$OUT_FILE" ||
		fail "sqk info $img: $(grep compressor: "$OUT_FILE"), expected lzo $opts"
	run_capture infoj "$SQK" info --json "$img"
	[ "$RC" = 0 ] || { show_err; fail "sqk info --json $img exited $RC"; }
	python3 - "$OUT_FILE" "$alg" "$lvl" <<'EOF' || fail "sqk info --json $img: wrong compressor"
import json, sys
j = json.load(open(sys.argv[1]))
want = {'algorithm': sys.argv[2]}
if sys.argv[2] == 'lzo1x_999':
    want['level'] = int(sys.argv[3])
assert j['compressor'] == 'lzo', j['compressor']
assert j['compressor_options'] == want, (j['compressor_options'], want)
EOF
}

# sqk_extract_equal WHAT IMAGE SRC: sqk extract, compared with SRC; nothing on stderr.
sqk_extract_equal() {
	local what=$1 img=$2 src=$3 d
	d=$(scratch x)
	rmdir "$d"
	run_capture sqkx "$SQK" extract "$img" "$d"
	[ "$RC" = 0 ] || { show_err; fail "$what: sqk extract exited $RC"; }
	[ -s "$ERR_FILE" ] && { show_err; fail "$what: sqk extract wrote to stderr"; }
	tree_equal "$what: sqk extract" "$src" "$d"
	rm -rf "$d"
}

# Kernel mounts need root, a loop device and the kernel's LZO decompressor.
KERNEL=yes
if ! { [ -e /dev/loop-control ] || ls /dev/loop[0-9]* >/dev/null 2>&1; }; then
	KERNEL="no /dev/loop devices"
elif ! grep -qw squashfs /proc/filesystems && ! modprobe squashfs 2>/dev/null; then
	KERNEL="no squashfs in this kernel"
elif [ -r /proc/config.gz ] && ! zcat /proc/config.gz | grep -qx 'CONFIG_SQUASHFS_LZO=y'; then
	KERNEL="the kernel lacks CONFIG_SQUASHFS_LZO"
fi
kernel_equal() {
	local what=$1 img=$2 src=$3
	if [ "$KERNEL" != yes ]; then
		info "$what: kernel mount not checked: $KERNEL"
		return 0
	fi
	mount_sq "$img" "$W/kmnt"
	tree_equal "$what: kernel mount" "$src" "$W/kmnt"
	umount_sq "$W/kmnt"
}

# ---- 1. sqk mkimage -c lzo: the rich tree, every reader -----------------------------------------
IMG=$W/lzo.sqsh
sqk_build -c lzo "$W/src" "$IMG"
check_superblock "$IMG"
assert_comp "$IMG" lzo
[ "$(opts_block "$IMG")" = 0 ] || fail "default lzo wrote an options block: $(opts_block "$IMG")"
info_expect "$IMG" lzo1x_999 8
unsquashfs -s "$IMG" | grep -qx 'Compression lzo' || fail "unsquashfs -s does not say lzo"
kernel_equal "sqk lzo" "$IMG" "$W/src"
extract "$IMG" "$W/x.unsq"
tree_equal "sqk lzo: unsquashfs" "$W/src" "$W/x.unsq"
rm -rf "$W/x.unsq"
squashfuse_equal "$IMG" "$W/src" "$W/fmnt"
if [ -e /dev/fuse ] && [ -x "$SQKFUSE" ]; then
	fuse_mount "$IMG" "$W/smnt"
	tree_equal "sqk lzo: sqkfuse" "$W/src" "$W/smnt"
	fuse_umount "$W/smnt"
else
	info "sqkfuse comparison not run (no /dev/fuse or no sqkfuse)"
fi
sqk_extract_equal "sqk lzo" "$IMG" "$W/src"
run_capture verify "$SQK" verify "$IMG"
[ "$RC" = 0 ] || { cat "$OUT_FILE" >&2; fail "sqk verify of the lzo image exited $RC"; }
rm -f "$IMG"

# ---- 2. algorithms and levels: options block, unsquashfs and sqk read them ----------------------
# variant NAME BLOCK UNSQUASHFS-LINE ALG LEVEL SQK-OPTIONS...: BLOCK is the expected opts_block.
variant() {
	local name=$1 block=$2 unsq=$3 alg=$4 lvl=$5 img=$W/v.sqsh
	shift 5
	sqk_build "$@" "$W/small" "$img"
	assert_comp "$img" lzo
	[ "$(opts_block "$img")" = "$block" ] ||
		fail "$name: options block $(opts_block "$img"), expected $block"
	if [ -n "$unsq" ]; then
		unsquashfs -s "$img" | grep -q "$unsq" ||
			fail "$name: unsquashfs -s does not show '$unsq'"
	fi
	info_expect "$img" "$alg" "$lvl"
	extract "$img" "$W/x.v"
	tree_equal "$name: unsquashfs" "$W/small" "$W/x.v"
	rm -rf "$W/x.v"
	sqk_extract_equal "$name" "$img" "$W/small"
	[ "$name" = "-Xalgorithm lzo1x_1" ] && kernel_equal "$name" "$img" "$W/small"
	rm -f "$img"
}
# payloads: le32 algorithm (0 lzo1x_1 .. 4 lzo1x_999), le32 level; raw block header 0x8008
variant "-Xalgorithm lzo1x_1" "1 08800000000000000000" 'algorithm lzo1x_1$' lzo1x_1 0 \
	-comp lzo -Xalgorithm lzo1x_1
variant "lzo1x_1_11" "1 08800100000000000000" 'algorithm lzo1x_1_11' lzo1x_1_11 0 \
	-c lzo --lzo-algorithm lzo1x_1_11
variant "lzo1x_1_12" "1 08800200000000000000" 'algorithm lzo1x_1_12' lzo1x_1_12 0 \
	--compressor lzo --lzo-algorithm lzo1x_1_12
variant "lzo1x_1_15" "1 08800300000000000000" 'algorithm lzo1x_1_15' lzo1x_1_15 0 \
	-comp lzo -Xalgorithm lzo1x_1_15
variant "-Xcompression-level 1" "1 08800400000001000000" 'compression level 1' lzo1x_999 1 \
	-comp lzo -Xcompression-level 1
variant "lzo1x_999 -l 9" "1 08800400000009000000" 'compression level 9' lzo1x_999 9 \
	-c lzo --lzo-algorithm lzo1x_999 -l 9
variant "level 8 (the default)" "0" "" lzo1x_999 8 -c lzo -l 8 -b 64K

# option errors, as mksquashfs: a level only for lzo1x_999, known algorithms, lzo only
D=$(scratch bad)
for args in "-c lzo -Xalgorithm lzo1x_1 -Xcompression-level 3|only lzo1x_999 takes a level" \
	"-c lzo -l 10|1..9" "-c lzo --lzo-algorithm lzo1x_2|lzo1x_2" \
	"-c zstd -Xalgorithm lzo1x_1|needs --compressor lzo" "-comp lzma|lzma"; do
	# shellcheck disable=SC2086
	run_capture badopt "$SQK" mkimage ${args%%|*} "$W/small" "$D/o.sqsh"
	[ "$RC" = 2 ] || { show_err; fail "mkimage ${args%%|*}: exit $RC, expected 2"; }
	grep -q -- "${args#*|}" "$ERR_FILE" || { show_err; fail "mkimage ${args%%|*}: no '${args#*|}'"; }
	[ -z "$(ls -A "$D")" ] || fail "mkimage ${args%%|*} left $(ls -A "$D")"
done
info "bad lzo options: refused with exit 2, nothing written"

# ---- 3. mksquashfs -comp lzo images read by sqk -------------------------------------------------
for v in "default|" "lzo1x_1|-Xalgorithm lzo1x_1"; do
	name=${v%%|*}
	# shellcheck disable=SC2086
	mksquashfs "$W/small" "$W/m.sqsh" -comp lzo ${v#*|} -noappend -no-progress -quiet \
		-processors 2 >/dev/null 2>&1 || fail "mksquashfs -comp lzo ${v#*|} failed"
	assert_comp "$W/m.sqsh" lzo
	sqk_extract_equal "mksquashfs lzo $name" "$W/m.sqsh" "$W/small"
	run_capture cat "$SQK" cat "$W/m.sqsh" files/text_small
	[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/small/files/text_small" ||
		{ show_err; fail "mksquashfs lzo $name: sqk cat files/text_small differs"; }
	if [ "$name" = default ]; then
		info_expect "$W/m.sqsh" lzo1x_999 8
	else
		info_expect "$W/m.sqsh" lzo1x_1 0
	fi
	run_capture verify "$SQK" verify "$W/m.sqsh"
	[ "$RC" = 0 ] || { cat "$OUT_FILE" >&2; fail "mksquashfs lzo $name: sqk verify exited $RC"; }
	rm -f "$W/m.sqsh"
done

# Same algorithm, same bytes: the data blocks of one compressible file equal mksquashfs's (both
# run lzo1x_optimize after compressing).
mkdir -p "$W/one"
python3 -c '
import random, sys
random.seed(7)
w = [b"squash", b"inode", b"block", b"fragment", b"lzo", b"table", b"\n"]
open(sys.argv[1], "wb").write(b" ".join(random.choice(w) for _ in range(90000))[:393216])
' "$W/one/f"
# data_region IMAGE: hex of the bytes between the options block and the inode table
data_region() {
	python3 - "$1" <<'EOF'
import hashlib, struct, sys
b = open(sys.argv[1], 'rb').read()
start = 96
if struct.unpack_from('<H', b, 24)[0] & 0x400:
    start += 2 + (struct.unpack_from('<H', b, 96)[0] & 0x7FFF)
end = struct.unpack_from('<Q', b, 64)[0]
print(end - start, hashlib.sha256(b[start:end]).hexdigest())
EOF
}
for alg in lzo1x_999 lzo1x_1; do
	mksquashfs "$W/one" "$W/m1.sqsh" -comp lzo -Xalgorithm "$alg" -no-fragments -noappend \
		-no-progress -quiet >/dev/null 2>&1 || fail "mksquashfs -Xalgorithm $alg failed"
	sqk_build -q --no-fragments --no-checksums -c lzo --lzo-algorithm "$alg" "$W/one" "$W/s1.sqsh"
	a=$(data_region "$W/m1.sqsh") b=$(data_region "$W/s1.sqsh")
	[ "$a" = "$b" ] || fail "$alg: data blocks differ from mksquashfs's ($b vs $a)"
	[ "${a%% *}" -lt 300000 ] || fail "$alg: 384 KiB of text stored in ${a%% *} bytes"
	info "$alg: data blocks identical to mksquashfs's (${a%% *} bytes)"
	rm -f "$W/m1.sqsh" "$W/s1.sqsh"
done

# ---- 4. legacy lzma (id 2) and an unknown id: named, non-zero exit ------------------------------
sqk_build --no-checksums -c gzip "$W/small" "$W/g.sqsh"
# patched_copy ID OUT: a copy of g.sqsh whose superblock names compressor ID
patched_copy() {
	python3 -c '
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<H", b, 20, int(sys.argv[2]))
open(sys.argv[3], "wb").write(b)
' "$W/g.sqsh" "$1" "$2"
}
patched_copy 2 "$W/lzma.sqsh"
patched_copy 9 "$W/unk.sqsh"
for v in "lzma|compressor lzma (legacy, id 2) is not supported" "unk|unknown compressor id 9"; do
	img=$W/${v%%|*}.sqsh msg=${v#*|}
	for cmd in "ls" "ls -lR" "info" "info --json" "cat" "extract" "verify"; do
		set -- $cmd "$img"
		case $cmd in
		cat) set -- cat "$img" files/text_small ;;
		extract) set -- extract "$img" "$W/x.legacy" ;;
		esac
		run_capture legacy "$SQK" "$@"
		[ "$RC" != 0 ] || fail "sqk $cmd of ${v%%|*}: exit 0"
		[ "$RC" -lt 128 ] || { show_err; fail "sqk $cmd of ${v%%|*}: killed by a signal"; }
		grep -qF "$msg" "$ERR_FILE" "$OUT_FILE" ||
			{ show_err; fail "sqk $cmd of ${v%%|*}: no '$msg'"; }
		# verify reports; info --json prints its JSON with the error (t_32)
		[ "$cmd" = verify ] || [ "$cmd" = "info --json" ] || [ ! -s "$OUT_FILE" ] ||
			fail "sqk $cmd of ${v%%|*} printed: $(head -c 200 "$OUT_FILE")"
		[ "$cmd" != "info --json" ] || python3 -c 'import json,sys; assert sys.argv[2] in json.load(open(sys.argv[1]))["error"]' "$OUT_FILE" "$msg" ||
			fail "sqk info --json of ${v%%|*}: no JSON error with '$msg'"
		[ -e "$W/x.legacy" ] && [ -n "$(ls -A "$W/x.legacy")" ] &&
			fail "sqk extract of ${v%%|*} wrote $(ls -A "$W/x.legacy")"
	done
	info "${v%%|*}: sqk ls/info/cat/extract/verify exit non-zero with '$msg'"
	if [ -e /dev/fuse ] && [ -x "$SQKFUSE" ]; then
		mkdir -p "$W/lmnt"
		rc=0
		timeout -k 5 60 "$SQKFUSE" "$img" "$W/lmnt" 2>"$TMP/lf.err" || rc=$?
		mountpoint -q "$W/lmnt" && { umount "$W/lmnt"; fail "sqkfuse mounted ${v%%|*}"; }
		[ "$rc" = 1 ] || fail "sqkfuse on ${v%%|*}: exit $rc, expected 1: $(cat "$TMP/lf.err")"
		grep -qF "$msg" "$TMP/lf.err" ||
			fail "sqkfuse on ${v%%|*} does not say '$msg': $(cat "$TMP/lf.err")"
		info "${v%%|*}: sqkfuse (daemon mode) exits 1 with '$msg'"
	fi
done
