#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The counts of sqk mkimage's summary, sqk info (text and --json) and sqk verify (text and
# --json) agree and use the same words, on a tree with every inode kind, hard links, duplicates
# (of whole blocks and of a tail), sparse files, raw and compressed blocks; and they are the
# source's counts (files, directories, symlinks, devices, fifos/sockets, extra hard links). Also
# with a tar source and a mksquashfs image (info and verify: mksquashfs prints no such summary).
# sqk info prints only the compressor options each compressor has (no level for xz or lz4, none
# for lzo's other algorithms) and says when the image stores none.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 mknod mkfifo tar mksquashfs

W=$(scratch counts)
S=$W/src
mkdir -p "$S/a/b/c" "$S/empty_dir"
head -c 400000 /dev/urandom >"$S/random"          # raw blocks and a tail
cp "$S/random" "$S/a/random_dup"                   # a duplicate of blocks and tail
(for i in $(seq 1 20000); do echo "line $i of compressible text"; done) >"$S/a/text"
echo "same small tail" >"$S/a/b/t1"
echo "same small tail" >"$S/a/b/t2"                # a duplicate of a tail only
: >"$S/a/empty1"
: >"$S/a/empty2"
truncate -s 1M "$S/sparse" && echo end >>"$S/sparse"
ln "$S/a/text" "$S/a/b/c/text_link"
ln "$S/a/text" "$S/text_link2"                     # 2 extra names of one file
ln -s random "$S/sym1"
ln -s ../../random "$S/a/b/sym2"
mknod "$S/cdev" c 1 3
mknod "$S/bdev" b 7 0
mkfifo "$S/a/fifo"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$S/a/sock"

# the source's own counts (inodes by kind, extra names of non-directories)
read -r SRC_FILES SRC_DIRS SRC_SYMS SRC_DEVS SRC_IPC SRC_LINKS < <(python3 - "$S" <<'EOF'
import os, stat, sys
seen, names, k = set(), 0, dict(f=0, d=0, l=0, dev=0, ipc=0)
for root, dirs, files in os.walk(sys.argv[1]):
    for n in [root] + [os.path.join(root, f) for f in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]]:
        st = os.lstat(n)
        m = st.st_mode
        if not stat.S_ISDIR(m):
            names += 1
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        kind = 'd' if stat.S_ISDIR(m) else 'f' if stat.S_ISREG(m) else 'l' if stat.S_ISLNK(m) \
            else 'dev' if stat.S_ISBLK(m) or stat.S_ISCHR(m) else 'ipc'
        k[kind] += 1
nondir = k['f'] + k['l'] + k['dev'] + k['ipc']
print(k['f'], k['d'], k['l'], k['dev'], k['ipc'], names - nondir)
EOF
)
info "source: $SRC_FILES files, $SRC_DIRS directories, $SRC_SYMS symlinks, $SRC_DEVS devices, $SRC_IPC fifos/sockets, $SRC_LINKS extra hard links"

# counts_of FILE: the inodes, blocks and duplicates phrases of sqk mkimage's summary, sqk info
# or sqk verify text, one a line ("15: 6 files, ...", "3 data (...), ...", "2 files, N bytes").
phrases_summary() {
	sed -n 's/^inodes     //p; s/^blocks     //p; s/^duplicates //p' "$1"
}
phrases_info() {
	sed -n 's/^inodes: *//p; s/^blocks: *//p; s/^duplicates: *//p' "$1"
}
phrases_verify() {
	sed -n 's/.*; inodes \(.*extra hard links\); blocks \(.*fragment blocks\); duplicates \([0-9]* files, [0-9]* bytes\);.*/\1\n\2\n\3/p' "$1"
}
# json_counts FILE [KEY]: the "counts" object of a JSON document as one line of key=value.
json_counts() {
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["counts"]; print(" ".join("%s=%s" % kv for kv in sorted(c.items())))' "$1"
}

# agree WHAT IMAGE [SUMMARY-FILE]: info and verify (text and JSON) give the same counts, and
# the summary's when given; the files..links are the source's.
agree() {
	local what=$1 img=$2 sum=${3:-}
	run_capture info "$SQK" info "$img"
	[ "$RC" = 0 ] || { show_err; fail "$what: sqk info exited $RC"; }
	phrases_info "$OUT_FILE" >"$W/p.info"
	[ "$(wc -l <"$W/p.info")" = 3 ] || { cat "$OUT_FILE" >&2; fail "$what: info lacks the counts"; }
	run_capture verify "$SQK" verify "$img"
	[ "$RC" = 0 ] || { cat "$OUT_FILE" >&2; fail "$what: sqk verify exited $RC"; }
	phrases_verify "$OUT_FILE" >"$W/p.verify"
	cmp -s "$W/p.info" "$W/p.verify" || { diff "$W/p.info" "$W/p.verify" >&2; fail "$what: info and verify differ"; }
	if [ -n "$sum" ]; then
		phrases_summary "$sum" >"$W/p.sum"
		cmp -s "$W/p.sum" "$W/p.info" || { diff "$W/p.sum" "$W/p.info" >&2; fail "$what: the mkimage summary and info differ"; }
	fi
	run_capture infoj "$SQK" info --json "$img"
	json_counts "$OUT_FILE" >"$W/j.info" || fail "$what: info --json has no counts"
	run_capture verifyj "$SQK" verify --json "$img"
	json_counts "$OUT_FILE" >"$W/j.verify" || fail "$what: verify --json has no counts"
	cmp -s "$W/j.info" "$W/j.verify" || { diff "$W/j.info" "$W/j.verify" >&2; fail "$what: info --json and verify --json differ"; }
	# the JSON says what the text says
	python3 - "$W/j.info" "$W/p.info" <<'EOF' || fail "$what: the JSON counts are not the text's"
import re, sys
j = dict(kv.split('=') for kv in open(sys.argv[1]).read().split())
t = open(sys.argv[2]).read()
want = ('%(inodes)s: %(files)s files, %(directories)s directories, %(symlinks)s symlinks, '
        '%(devices)s devices, %(fifos_sockets)s fifos/sockets; %(extra_hard_links)s extra hard links\n'
        '%(data_blocks)s data (%(raw_blocks)s stored raw), %(sparse_blocks)s sparse, '
        '%(fragment_blocks)s fragment blocks\n'
        '%(duplicate_files)s files, %(duplicate_bytes)s bytes\n') % j
assert t == want, (t, want)
EOF
	python3 - "$W/j.info" "$SRC_FILES" "$SRC_DIRS" "$SRC_SYMS" "$SRC_DEVS" "$SRC_IPC" "$SRC_LINKS" <<'EOF' ||
import sys
j = dict(kv.split('=') for kv in open(sys.argv[1]).read().split())
got = [j[k] for k in ('files', 'directories', 'symlinks', 'devices', 'fifos_sockets', 'extra_hard_links')]
assert got == sys.argv[2:], (got, sys.argv[2:])
assert int(j['duplicate_files']) >= 2 and int(j['sparse_blocks']) >= 8, j
EOF
		fail "$what: the counts are not the source's: $(cat "$W/j.info")"
	info "$what: $(head -n 1 "$W/p.info" | cut -c1-60)... agree"
}

sqk_build "$S" "$W/s.sqsh"
agree "sqk mkimage" "$W/s.sqsh" "$TMP/build.out"
sqk_build -c xz -b 64K --no-fragments "$S" "$W/nf.sqsh"
agree "sqk mkimage -c xz -b 64K --no-fragments" "$W/nf.sqsh" "$TMP/build.out"
(cd "$S" && tar --format=posix --exclude=./a/sock -cf "$W/src.tar" .) || fail "tar failed"
sqk_build --tar "$W/src.tar" "$W/t.sqsh"
SRC_IPC=$((SRC_IPC - 1)) agree "sqk mkimage --tar (tar stores no socket)" "$W/t.sqsh" \
	"$TMP/build.out"
mksquashfs "$S" "$W/m.sqsh" -noappend -quiet -no-progress -processors 2 >/dev/null ||
	fail "mksquashfs failed"
agree "mksquashfs" "$W/m.sqsh"

# compressor options: only the ones each compressor has; "not stored" when there is no block
compressor_line() {
	sqk_build -noappend "$@" "$W/small" "$W/c.sqsh"
	"$SQK" info "$W/c.sqsh" | sed -n 's/^compressor: *//p'
}
mkdir -p "$W/small" && echo hello >"$W/small/f"
while IFS='|' read -r args want; do
	# shellcheck disable=SC2086
	got=$(compressor_line $args)
	[ "$got" = "$want" ] || fail "sqk mkimage $args: sqk info says 'compressor: $got', expected '$want'"
done <<'LIST'
-c zstd|zstd (level=15; not stored: the defaults)
-c zstd -l 3|zstd (level=3)
-c xz|xz (dictionary_size=131072 bcj=none; not stored: the defaults)
-c xz --bcj x86 --bcj arm|xz (dictionary_size=131072 bcj=x86,arm)
-c gzip -l 5|gzip (level=5 window_bits=15 strategies=0)
-c lz4|lz4 (hc=0)
-c lzo -Xalgorithm lzo1x_1|lzo (algorithm=lzo1x_1)
-c lzo|lzo (algorithm=lzo1x_999 level=8; not stored: the defaults)
LIST
"$SQK" info --json "$W/c.sqsh" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["compressor_options"] == {"algorithm": "lzo1x_999", "level": 8}, j
assert j["compressor_options_stored"] is False, j' || fail "info --json: lzo defaults"
sqk_build -noappend -c xz "$W/small" "$W/c.sqsh"
"$SQK" info --json "$W/c.sqsh" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert "level" not in j["compressor_options"], j' || fail "info --json: xz shows a level"
info "sqk info: each compressor's own options, and whether they are stored"
