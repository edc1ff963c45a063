#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Builder options on a smaller tree (no 5 GiB file): block sizes, compressors and levels,
# --no-fragments, --no-dedup, --no-xattrs, -j 1, -q, several sources, --mem. Each image is
# extracted with unsquashfs (and some are kernel-mounted) and compared with the source.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd unsquashfs python3

W=$(scratch opt)
SRC=$W/src
$MKTREE --small --no-sparse "$SRC" || fail "mktree failed"
NONE64=18446744073709551615

# variant NAME COMP BLOCK SQK-OPTIONS...: build, check the superblock, extract and compare.
variant() {
	local name=$1 comp=$2 bs=$3 img=$W/$1.sqsh
	shift 3
	sqk_build "$@" "$SRC" "$img"
	check_superblock "$img"
	assert_comp "$img" "$comp"
	[ "$(sb_u32 "$img" 12)" = "$bs" ] || fail "$name: block_size $(sb_u32 "$img" 12), expected $bs"
	extract "$img" "$W/x.$name"
	tree_equal "$name ($*)" "$SRC" "$W/x.$name"
	rm -rf "$W/x.$name"
}

variant b4k_gzip gzip 4096 -b 4K -c gzip
variant b4096_lz4 lz4 4096 --block-size 4096 --compressor lz4
variant b1m_lz4 lz4 1048576 -b 1M -c lz4
variant b64k_xz xz 65536 -b 65536 -c xz -l 1
variant xz_bcj xz 131072 -c xz --bcj x86 --bcj arm
variant gzip_l1 gzip 131072 -c gzip -l 1
variant lz4_hc lz4 131072 -c lz4 -l 12
variant zstd_l1 zstd 131072 -c zstd -l 1 -j 1
variant zstd_l22 zstd 131072 -l 22 -b 128K
variant j1 zstd 131072 -j 1
variant nofrag zstd 131072 --no-fragments
variant nodedup zstd 131072 --no-dedup
variant nofrag_nodedup_b1m gzip 1048576 --no-fragments --no-dedup -b 1M -c gzip

# fragments: used by default, none with --no-fragments (fragment_count at offset 16)
[ "$(sb_u32 "$W/j1.sqsh" 16)" -gt 0 ] || fail "default build has no fragment blocks"
[ "$(sb_u32 "$W/nofrag.sqsh" 16)" = 0 ] ||
	fail "--no-fragments image has fragment_count $(sb_u32 "$W/nofrag.sqsh" 16)"
# dedup: the tree holds a 400000-byte random file twice (plus smaller duplicates)
s_dedup=$(stat -c %s "$W/j1.sqsh")
s_nodedup=$(stat -c %s "$W/nodedup.sqsh")
info "image size: default $s_dedup, --no-dedup $s_nodedup"
[ "$s_nodedup" -ge $((s_dedup + 390000)) ] ||
	fail "--no-dedup image ($s_nodedup) not >= default ($s_dedup) + 390000: dedup not working or --no-dedup ignored"
# the same compressor at different levels must give different images (level honoured)
cmp -s "$W/zstd_l1.sqsh" "$W/zstd_l22.sqsh" && fail "-l 1 and -l 22 gave identical zstd images"

# --no-xattrs: no xattr table, and no xattrs visible through the kernel or unsquashfs
img=$W/noxattr.sqsh
sqk_build --no-xattrs "$SRC" "$img"
check_superblock "$img"
[ "$(python3 -c 'import struct,sys; f=open(sys.argv[1],"rb"); f.seek(56); print(struct.unpack("<Q", f.read(8))[0])' "$img")" = $NONE64 ] ||
	fail "--no-xattrs image has an xattr id table"
extract "$img" "$W/x.noxattr"
tree_equal "--no-xattrs (unsquashfs)" "$SRC" "$W/x.noxattr" --b-no-xattrs
if grep -qw squashfs /proc/filesystems && [ -e /dev/loop-control ]; then
	mount_sq "$img" "$W/mnt"
	tree_equal "--no-xattrs (kernel)" "$SRC" "$W/mnt" --b-no-xattrs
	umount_sq "$W/mnt"
	# and the default image does carry them, as the kernel sees it
	mount_sq "$W/j1.sqsh" "$W/mnt"
	tree_equal "default (kernel)" "$SRC" "$W/mnt"
	v=$(getfattr -h --only-values -n trusted.on_link "$W/mnt/xattr/link" 2>/dev/null)
	[ "$v" = "symlink attr" ] || fail "kernel mount: trusted.on_link on a symlink is '$v'"
	umount_sq "$W/mnt"
fi

# -q: nothing on stdout or stderr; without -q a summary on stdout
run_capture quiet "$SQK" mkimage -q "$SRC" "$W/quiet.sqsh"
[ "$RC" = 0 ] || { show_err; fail "-q build exited $RC"; }
[ -s "$OUT_FILE" ] && fail "-q printed on stdout: $(head -c 300 "$OUT_FILE")"
[ -s "$ERR_FILE" ] && fail "-q printed on stderr: $(head -c 300 "$ERR_FILE")"
cmp -s "$W/quiet.sqsh" "$W/j1.sqsh" || fail "-q changed the image (differs from the -j 1 build)"
run_capture loud "$SQK" mkimage "$SRC" "$W/loud.sqsh"
[ "$RC" = 0 ] || { show_err; fail "build exited $RC"; }
[ -s "$OUT_FILE" ] || fail "no summary on stdout without -q"
info "summary: $(head -n 3 "$OUT_FILE" | tr '\n' '|')"

# several sources: each becomes a root entry named by its basename (a file too)
img=$W/multi.sqsh
sqk_build "$SRC/files" "$SRC/links" "$SRC/xattr" "$SRC/top_level_file" "$SRC/names/ディレクトリ" "$img"
extract "$img" "$W/x.multi"
got=$(cd "$W/x.multi" && ls -A | LC_ALL=C sort | tr '\n' ' ')
want=$(printf '%s\n' files links top_level_file xattr ディレクトリ | LC_ALL=C sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "several sources: root holds '$got', expected '$want'"
for d in files links xattr; do
	tree_equal "several sources: $d" "$SRC/$d" "$W/x.multi/$d"
done
tree_equal "several sources: names/ディレクトリ" "$SRC/names/ディレクトリ" "$W/x.multi/ディレクトリ"
cmp -s "$SRC/top_level_file" "$W/x.multi/top_level_file" || fail "several sources: file source differs"
[ "$(stat -c %Y "$W/x.multi/top_level_file")" = "$(stat -c %Y "$SRC/top_level_file")" ] ||
	fail "several sources: file source mtime differs"
# --mem 1M over 40,000 files with long names, half of them duplicates, hard links across
# directories: the directory entries, digests and directory table all wait in temporary files,
# and the image is byte for byte the one --mem 512M gives (everything in memory); it verifies
# and extracts to the source.
MANY=$W/many
python3 - "$MANY" <<'EOF2' || fail "cannot write the many-files tree"
import hashlib, os, sys
root = sys.argv[1]
for d in range(4):
    os.makedirs(f"{root}/d{d}")
    for i in range(10000):
        f = d * 10000 + i
        h = hashlib.sha256(b"%d" % f).hexdigest()
        with open(f"{root}/d{d}/{h}{h[:40]}.{f % 5}", "w") as o:
            o.write("content %d\n" % (f % 20000))
for d in range(1, 4):
    os.link(f"{root}/d0/" + sorted(os.listdir(f"{root}/d0"))[d], f"{root}/d{d}/hardlink")
EOF2
sqk_build --mem 1M "$MANY" "$W/many_1m.sqsh"
sqk_build --mem 512M "$MANY" "$W/many_512m.sqsh"
cmp -s "$W/many_1m.sqsh" "$W/many_512m.sqsh" ||
	fail "--mem 1M and --mem 512M gave different images of the same tree"
"$SQK" verify "$W/many_1m.sqsh" >/dev/null || fail "sqk verify failed on the --mem 1M image"
extract "$W/many_1m.sqsh" "$W/x.many"
tree_equal "--mem 1M, 40,000 files" "$MANY" "$W/x.many"
rm -rf "$W/x.many" "$MANY"

# two sources with the same basename: an error, or (mksquashfs-like) a renamed second entry;
# never a directory with duplicate names (which unsquashfs and the kernel reject)
run_capture samename "$SQK" mkimage "$SRC/dup/a" "$SRC/hl/a" "$W/same.sqsh"
if [ "$RC" != 0 ]; then
	[ -e "$W/same.sqsh" ] && fail "failed build with duplicate names left an image"
	[ -s "$ERR_FILE" ] || fail "duplicate-name error printed nothing"
	info "two sources named 'a': rejected: $(head -n 1 "$ERR_FILE")"
else
	extract "$W/same.sqsh" "$W/x.same"
	n=$(ls -A "$W/x.same" | wc -l)
	[ "$n" = 2 ] || fail "two sources named 'a': root has $n entries: $(ls -A "$W/x.same")"
	info "two sources named 'a': accepted as: $(ls -A "$W/x.same" | tr '\n' ' ')"
fi
exit 0
