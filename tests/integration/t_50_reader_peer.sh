#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk extract against images from other builders: mksquashfs with many option sets (each
# compressor, block sizes, fragments on/off/always, uncompressed tables, -nopad, -no-sparse,
# xz BCJ, -offset), sqk mkimage, and gensquashfs/tar2sqfs. Each extraction is compared with the
# source by treecmp.py (content, modes, owners, mtimes, xattrs, hard links, devices...).
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd mksquashfs python3

W=$(scratch peer)
$MKTREE "$W/full" || fail "mktree failed"
$MKTREE --small --no-sparse "$W/src" || fail "mktree --small failed"

mksq() {
	local out
	out=$(mksquashfs "$@" -noappend -no-progress -quiet -processors 2 2>&1) ||
		{ printf '%s\n' "$out" | tail -n 20 >&2; fail "mksquashfs $* failed"; }
}

# sqk_extract NAME IMAGE DEST [sqk extract options...]
sqk_extract() {
	local name=$1 img=$2 dest=$3
	shift 3
	run_capture "x_$name" "$SQK" extract "$@" "$img" "$dest"
	[ "$RC" = 0 ] || { show_err; fail "$name: sqk extract $* exited $RC"; }
	[ -s "$ERR_FILE" ] && { show_err; fail "$name: sqk extract wrote to stderr"; }
	return 0
}

# variant NAME SRC MKSQUASHFS-OPTIONS...: build, extract with sqk, compare.
variant() {
	local name=$1 src=$2 img=$W/$1.sqsh
	shift 2
	mksq "$src" "$img" "$@"
	sqk_extract "$name" "$img" "$W/x.$name"
	tree_equal "mksquashfs $name ($*)" "$src" "$W/x.$name"
	rm -rf "$W/x.$name" "$img"
}

# the full tree once (5 GiB sparse file): written sparse
mksq "$W/full" "$W/full.sqsh" -comp zstd
sqk_extract full "$W/full.sqsh" "$W/x.full"
tree_equal "mksquashfs zstd, full tree" "$W/full" "$W/x.full"
blocks=$(stat -c %b "$W/x.full/sparse/big5g")
[ "$blocks" -lt 4096 ] || fail "sparse/big5g extracted with $blocks blocks: holes not kept"
rm -rf "$W/x.full" "$W/full.sqsh"

variant gzip "$W/src" -comp gzip
variant xz "$W/src" -comp xz
variant lz4 "$W/src" -comp lz4
variant lz4hc "$W/src" -comp lz4 -Xhc
variant zstd "$W/src" -comp zstd -Xcompression-level 3
variant b4k "$W/src" -comp gzip -b 4K
variant b1m "$W/src" -comp zstd -b 1M
variant nofrag "$W/src" -no-fragments
variant alwaysfrag "$W/src" -always-use-fragments
variant uncompressed "$W/src" -noI -noD -noF -noX
variant nopad "$W/src" -nopad
variant nosparse "$W/src" -no-sparse
variant xz_bcj "$W/src" -comp xz -Xbcj x86
variant gzip_opts "$W/src" -comp gzip -Xcompression-level 4 -Xwindow-size 12
variant noexport_nodup "$W/src" -no-exports -no-duplicates

# an image at an offset inside a bigger file: every command takes --offset
off=12345
mksq "$W/src" "$W/off.img" -offset $off
run_capture x_off "$SQK" extract "$W/off.img" "$W/x.off"
[ "$RC" = 1 ] || fail "extract without --offset of an offset image exited $RC (expected 1)"
rm -rf "$W/x.off"
sqk_extract off "$W/off.img" "$W/x.off" --offset $off
tree_equal "mksquashfs -offset $off" "$W/src" "$W/x.off"
run_capture ls_off "$SQK" ls --offset $off "$W/off.img" files
[ "$RC" = 0 ] && grep -qx size_4097 "$OUT_FILE" || { show_err; fail "ls --offset failed"; }
run_capture cat_off "$SQK" cat --offset $off "$W/off.img" files/text_small
[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/files/text_small" || { show_err; fail "cat --offset"; }
run_capture info_off "$SQK" info --json --offset $off "$W/off.img"
[ "$RC" = 0 ] && python3 -m json.tool "$OUT_FILE" >/dev/null || { show_err; fail "info --offset"; }
rm -rf "$W/x.off" "$W/off.img"

# images from sqk mkimage
for opts in "-c zstd" "-c xz -b 4K" "-c lz4 --no-fragments" "-c gzip -b 1M --no-dedup"; do
	# shellcheck disable=SC2086
	sqk_build $opts "$W/src" "$W/mk.sqsh"
	sqk_extract mk "$W/mk.sqsh" "$W/x.mk"
	tree_equal "sqk mkimage $opts" "$W/src" "$W/x.mk"
	rm -rf "$W/x.mk" "$W/mk.sqsh"
done

# squashfs-tools-ng: gensquashfs --pack-dir and tar2sqfs; contents only
if command -v gensquashfs >/dev/null; then
	out=$(gensquashfs -q -f -D "$W/src/files" -c xz "$W/gen.sqsh" 2>&1) ||
		{ echo "$out" >&2; fail "gensquashfs failed"; }
	sqk_extract gen "$W/gen.sqsh" "$W/x.gen"
	diff -r "$W/src/files" "$W/x.gen" >&2 || fail "gensquashfs image: contents differ"
	info "gensquashfs: contents equal"
else
	info "gensquashfs not installed; skipped"
fi
if command -v tar2sqfs >/dev/null; then
	(cd "$W/src" && tar --xattrs -cf - files dup hl links) >"$W/t.tar"
	out=$(tar2sqfs -q -f -c lz4 "$W/t2s.sqsh" <"$W/t.tar" 2>&1) ||
		{ echo "$out" >&2; fail "tar2sqfs failed"; }
	sqk_extract t2s "$W/t2s.sqsh" "$W/x.t2s"
	for d in files dup hl links; do
		diff -r --no-dereference "$W/src/$d" "$W/x.t2s/$d" >&2 ||
			fail "tar2sqfs image: $d differs"
	done
	info "tar2sqfs: contents equal"
fi
exit 0
