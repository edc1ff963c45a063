#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk tar: the rich tree (with its 5 GiB sparse file, plus a 1 GiB sparse file and densely
# written zero blocks) through sqk mkimage and sqk tar:
# - GNU tar (and bsdtar when installed) extract it equal to the source: contents, modes, owners,
#   mtimes, xattrs of every namespace, hard links, symlinks, devices, fifos; the socket is
#   skipped with a warning naming it;
# - the archive, read by Python's tarfile: entries in image order (the top './', then each
#   directory before its entries, names sorted as stored), later names of an inode as hard-link
#   entries to the first, sparse maps on the sparse files, xattrs in SCHILY.xattr records;
# - sqk mkimage --tar of it builds an image whose archive is the same, byte for byte;
# - it stays sparse (6 GiB of holes, a few MiB of archive; mksquashfs images too); --no-sparse
#   stores zeros;
# - PATH: a subtree named relative to it, a single file; tar -tvf lines; hard links to a
#   symlink, a device and a fifo;
# - -o FILE (same bytes as stdout, replaces a file atomically), -z/-J/--zstd;
# - a corrupt data block: exit 1, the message names the file, no usable archive (stdout) and
#   no file at all (-o; an older FILE stays as it was); a pipe closed early: exit 1, no crash;
#   a terminal on stdout is refused; usage errors exit 2.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature tar
need_cmd python3 tar

W=$(scratch tar)
SRC=$W/src
$MKTREE "$SRC" || fail "mktree failed"
python3 - "$SRC" <<'EOF' || fail "adding the sparse files failed"
import os, sys
src = sys.argv[1]
with open(os.path.join(src, 'sparse', 'g1'), 'wb') as f:   # 1 GiB, three small data pieces
    f.truncate(1 << 30)
    for off in (4096, 300 << 20, (1 << 30) - 10):
        f.seek(off)
        f.write(b'data at %d' % off)
with open(os.path.join(src, 'files', 'zeros_dense'), 'wb') as f:   # written, not holes
    f.write(bytes(3 << 20) + b'end' + bytes(1 << 20))
for p in ('sparse/g1', 'files/zeros_dense', 'sparse', 'files'):
    os.utime(os.path.join(src, p), (1600000000, 1600000000))
EOF
IMG=$W/img.sqsh
sqk_build "$SRC" "$IMG"

# --- GNU tar extraction equals the source --------------------------------------------------
mkdir -p "$W/x.gnu"
"$SQK" tar "$IMG" 2>"$W/tar.err" >"$W/all.tar"
rc=$?
[ $rc = 0 ] || { cat "$W/tar.err" >&2; fail "sqk tar exited $rc"; }
grep -q '/dev/sock: warning: socket skipped (a tar archive cannot hold sockets)' "$W/tar.err" ||
	{ cat "$W/tar.err" >&2; fail "no warning naming the skipped socket"; }
[ "$(grep -c '' "$W/tar.err")" = 1 ] || { cat "$W/tar.err" >&2; fail "unexpected messages"; }
tar -xpf "$W/all.tar" --xattrs --xattrs-include='*' --numeric-owner -C "$W/x.gnu" \
	2>"$W/gnu.err" || { head -n 20 "$W/gnu.err" >&2; fail "GNU tar could not extract it"; }
tree_equal "GNU tar -x" "$SRC" "$W/x.gnu" --exclude dev/sock
[ ! -e "$W/x.gnu/dev/sock" ] || fail "a socket was extracted"

# --- round trip: sqk mkimage --tar of the archive builds an image that gives the same archive
"$SQK" tar "$IMG" 2>/dev/null | "$SQK" mkimage -q --tar - "$W/rt.sqsh"
[ "${PIPESTATUS[*]}" = "0 0" ] || fail "sqk tar | sqk mkimage --tar exited ${PIPESTATUS[*]}"
"$SQK" tar "$W/rt.sqsh" 2>/dev/null | cmp -s - "$W/all.tar" ||
	fail "the image rebuilt by sqk mkimage --tar gives a different archive"
rm -f "$W/rt.sqsh"
info "sqk tar | sqk mkimage --tar: the rebuilt image gives the same archive, byte for byte"

# --- the archive's structure, read by Python's tarfile -------------------------------------
python3 - "$SRC" "$W/all.tar" <<'EOF' || fail "archive structure check failed"
import os, stat, sys, tarfile
src, path = os.fsencode(sys.argv[1]), sys.argv[2]

def image_order(d, rel):
    """Names below d as the image holds them: sorted bytewise, directories before contents."""
    out = []
    for n in sorted(os.listdir(d)):
        p, r = os.path.join(d, n), (rel + b'/' + n if rel else n)
        st = os.lstat(p)
        if stat.S_ISSOCK(st.st_mode):
            continue
        out.append(r)
        if stat.S_ISDIR(st.st_mode):
            out += image_order(p, r)
    return out

def zero_block(p, st, bs=128 << 10):
    """Whether sqk mkimage (block size bs) stores a block of p as a hole: a full block of
    zeros (the tail of a file goes to a fragment)."""
    if st.st_size <= bs:
        return False
    if st.st_blocks * 512 < st.st_size:
        return True
    with open(p, 'rb') as f:
        return any(not any(c) for c in iter(lambda: f.read(bs), b'') if len(c) == bs)

want = [b'.'] + image_order(src, b'')
with tarfile.open(path, encoding='utf-8', errors='surrogateescape') as tf:
    members = tf.getmembers()
b = lambda s: s.encode('utf-8', 'surrogateescape')
got = [b(m.name) for m in members]
assert got == want, 'order: first difference at %r' % next(
    ((i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w), (len(got), len(want)))
first, nlinks, nsparse, nxattr = {}, 0, 0, 0
for m in members:
    name = b(m.name)
    st = os.lstat(os.path.join(src, name) if name != b'.' else src)
    key = (st.st_dev, st.st_ino)
    assert (m.uid, m.gid, m.mtime) == (st.st_uid, st.st_gid, int(st.st_mtime)), name
    if not stat.S_ISDIR(st.st_mode) and key in first:
        assert m.islnk() and b(m.linkname) == first[key], (name, m.type, m.linkname)
        nlinks += 1
        continue
    first[key] = name
    assert stat.S_IMODE(st.st_mode) == m.mode or m.issym(), (name, oct(m.mode))
    if stat.S_ISREG(st.st_mode):
        assert m.isreg() and m.size == st.st_size, name
        assert (m.sparse is not None) == zero_block(os.path.join(src, name), st), name
        nsparse += m.sparse is not None
    elif stat.S_ISLNK(st.st_mode):
        assert m.issym() and b(m.linkname) == os.readlink(os.path.join(src, name)), name
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        assert (m.ischr() if stat.S_ISCHR(st.st_mode) else m.isblk()), name
        assert (m.devmajor, m.devminor) == (os.major(st.st_rdev), os.minor(st.st_rdev)), name
    elif stat.S_ISFIFO(st.st_mode):
        assert m.isfifo(), name
    else:
        assert m.isdir(), name
    xa = {os.fsencode(k): os.getxattr(os.path.join(src, name), k, follow_symlinks=False)
          for k in os.listxattr(os.path.join(src, name), follow_symlinks=False)}
    xb = {b(k[len('SCHILY.xattr.'):]): b(v) for k, v in m.pax_headers.items()
          if k.startswith('SCHILY.xattr.')}
    assert xa == xb, (name, xa, xb)
    nxattr += len(xb)
assert nlinks >= 4, nlinks          # hl: two more names of one, one of small_x and of empty_x
assert nsparse >= 5, nsparse        # big5g, g1, holes_small, zeros_300k, zeros_dense
print('  tarfile: %d entries in image order, %d hard-link entries, %d sparse files, %d xattrs'
      % (len(members), nlinks, nsparse, nxattr))
EOF

# --- sparse: 6 GiB of holes make a small archive, extracted sparse ------------------------
size=$(stat -c %s "$W/all.tar")
[ "$size" -lt $((64 << 20)) ] || fail "the archive is $size bytes: holes were stored"
for f in sparse/big5g sparse/g1; do
	alloc=$(( $(stat -c %b "$W/x.gnu/$f") * 512 ))
	[ "$alloc" -lt $((8 << 20)) ] || fail "GNU tar extracted $f with $alloc bytes allocated"
done
info "archive of $(du -sh --apparent-size "$SRC" | cut -f1) is $size bytes"
dense=$("$SQK" tar --no-sparse "$IMG" files/zeros_dense | wc -c)
sparse=$("$SQK" tar "$IMG" files/zeros_dense | wc -c)
[ "$dense" -gt $((4 << 20)) ] && [ "$sparse" -lt $((1 << 20)) ] ||
	fail "zeros_dense: --no-sparse gave $dense bytes, the default $sparse"

# mksquashfs stores all-zero blocks as holes too: its images give sparse archives as well
if command -v mksquashfs >/dev/null 2>&1; then
	M=$W/msq
	mkdir -p "$M/src" "$M/x"
	truncate -s 100M "$M/src/sp" && printf hello | dd of="$M/src/sp" bs=1 seek=50000000 \
		conv=notrunc 2>/dev/null
	head -c 3000000 /dev/zero >"$M/src/z"
	mksquashfs "$M/src" "$M/m.sqsh" -noappend -quiet -no-progress >/dev/null ||
		fail "mksquashfs failed"
	"$SQK" tar "$M/m.sqsh" >"$M/m.tar" || fail "sqk tar of the mksquashfs image failed"
	[ "$(stat -c %s "$M/m.tar")" -lt $((1 << 20)) ] ||
		fail "mksquashfs image: archive of $(stat -c %s "$M/m.tar") bytes, holes stored"
	tar -xf "$M/m.tar" -C "$M/x" && cmp "$M/src/sp" "$M/x/sp" && cmp "$M/src/z" "$M/x/z" ||
		fail "mksquashfs image: extracted files differ"
	rm -rf "$M"
fi

# --- bsdtar extraction --------------------------------------------------------------------
if command -v bsdtar >/dev/null 2>&1; then
	mkdir -p "$W/x.bsd"
	bsdtar -xpf "$W/all.tar" --xattrs --numeric-owner -C "$W/x.bsd" 2>"$W/bsd.err" ||
		{ head -n 20 "$W/bsd.err" >&2; fail "bsdtar could not extract it"; }
	# bsdtar gives './' its mode but not its mtime (so for archives of GNU tar too)
	tree_equal "bsdtar -x" "$SRC" "$W/x.bsd" --exclude dev/sock --ignore-root-attrs
	rm -rf "$W/x.bsd"
else
	info "bsdtar not installed: extraction with it not tested"
fi
rm -rf "$W/x.gnu"

# --- PATH and tar -tvf ----------------------------------------------------------------------
"$SQK" tar "$IMG" hl/ | tar -tvf - >"$W/hl.lst" || fail "sqk tar IMG hl | tar -tvf failed"
names=$(awk '{ print $6 }' "$W/hl.lst" | tr '\n' ' ')
[ "$names" = "./ a/ a/empty_y a/one b/ b/c/ b/c/two b/small_y empty_x small_x three " ] ||
	{ cat "$W/hl.lst" >&2; fail "PATH hl: names are '$names'"; }
grep -q '^hrw-r--r-- 100000/100000 .* b/c/two link to a/one$' "$W/hl.lst" ||
	{ cat "$W/hl.lst" >&2; fail "PATH hl: b/c/two is not a hard link to a/one"; }
grep -q '^-rw-r--r-- 100000/100000 *200000 .* a/one$' "$W/hl.lst" || fail "PATH hl: a/one line"
mkdir -p "$W/x.hl"
"$SQK" tar "$IMG" /hl | tar -xpf - --xattrs --xattrs-include='*' -C "$W/x.hl" ||
	fail "extracting PATH hl failed"
tree_equal "PATH hl" "$SRC/hl" "$W/x.hl"
# a hard link whose first name is outside PATH: the first name inside carries the data
"$SQK" tar "$IMG" hl/b | tar -tvf - | grep -q '^-rw-r--r-- 100000/100000 *200000 .* c/two$' ||
	fail "PATH hl/b: c/two does not carry the data"
[ "$("$SQK" tar "$IMG" files/size_1 | tar -tf -)" = size_1 ] || fail "PATH of one file"
"$SQK" tar "$IMG" 2>/dev/null | tar -tvf - 2>/dev/null >"$W/all.lst"
head -n 1 "$W/all.lst" | grep -q '^drwxr-xr-x 0/0 .* \./$' || fail "first entry is not ./"
grep -q '^brw-r----- 0/6 *8,1 .* dev/block_8_1$' "$W/all.lst" || fail "tar -tv: block_8_1"
grep -q '^crw------- 0/0 *4095,1048575 .* dev/char_4095_1048575$' "$W/all.lst" ||
	fail "tar -tv: char_4095_1048575"
grep -q '^lrwxrwxrwx 0/0 .* links/rel -> \.\./files/size_1$' "$W/all.lst" || fail "tar -tv: rel"
grep -q '^-rw-r--r-- 0/0 *5368709120 .* sparse/big5g$' "$W/all.lst" || fail "tar -tv: big5g"
info "tar -tvf: $(grep -c '' "$W/all.lst") lines, hard links, devices, symlinks as expected"

# hard links to a symlink, a device and a fifo: link entries, restored as links
L=$W/links
mkdir -p "$L/src" "$L/x"
ln -s target "$L/src/sl" && ln "$L/src/sl" "$L/src/sl2"
mknod "$L/src/c1" c 5 7 && ln "$L/src/c1" "$L/src/c2"
mkfifo "$L/src/f1" && ln "$L/src/f1" "$L/src/f2"
sqk_build "$L/src" "$L/img.sqsh"
"$SQK" tar "$L/img.sqsh" | tar -xpf - -C "$L/x" || fail "extracting hard-linked specials failed"
tree_equal "hard-linked symlink, device, fifo" "$L/src" "$L/x"
rm -rf "$L"

# --- -o FILE and compression ----------------------------------------------------------------
tar -cf "$W/out.tar" -C "$W" all.tar # an older archive: replaced (a file that is not one is not)
"$SQK" tar -o "$W/out.tar" "$IMG" 2>/dev/null || fail "sqk tar -o failed"
cmp -s "$W/out.tar" "$W/all.tar" || fail "-o FILE differs from the archive on stdout"
[ "$(stat -c %a "$W/out.tar")" = 644 ] || fail "-o FILE has mode $(stat -c %a "$W/out.tar")"
for z in "-z gzip" "-J xz" "--zstd zstd"; do
	set -- $z
	command -v "$2" >/dev/null 2>&1 || { info "$2 not installed: $1 not tested"; continue; }
	"$SQK" tar "$1" -o "$W/hl.tz" "$IMG" hl || fail "sqk tar $1 failed"
	"$2" -dc <"$W/hl.tz" | tar -tf - | tr '\n' ' ' >"$W/hl.names" ||
		fail "$2 -dc | tar -t of the $1 archive failed"
	[ "$(cat "$W/hl.names")" = "$(awk '{ print $6 }' "$W/hl.lst" | tr '\n' ' ')" ] ||
		fail "$1 archive lists '$(cat "$W/hl.names")'"
done
run_capture noparent "$SQK" tar -o "$W/no/such/dir/x.tar" "$IMG" hl
[ "$RC" = 1 ] && grep -q 'cannot create' "$ERR_FILE" || { show_err; fail "-o in a missing dir"; }

# --- a corrupt data block -------------------------------------------------------------------
C=$W/corrupt
mkdir -p "$C/src/d"
seq 1 300000 >"$C/src/d/big"
echo small >"$C/src/a"
sqk_build -c gzip "$C/src" "$C/img.sqsh"
python3 "$IT_DIR/sqfs_patch.py" patch "$C/img.sqsh" data-garbage /d/big >/dev/null ||
	fail "patching a data block failed"
# --no-verify: the garbage lies in the superblock's integrity chunk, which fails a verified open;
# this is the path of a block that does not decompress (verified reads: t_66_verify_default)
run_capture corrupt "$SQK" tar --no-verify "$C/img.sqsh"
[ "$RC" = 1 ] || { show_err; fail "corrupt image: exit $RC (expected 1)"; }
grep -q "img.sqsh: /d/big: read failed" "$ERR_FILE" ||
	{ show_err; fail "corrupt image: no message naming /d/big"; }
if tar -tf "$OUT_FILE" >/dev/null 2>&1; then
	fail "the archive of the corrupt image reads as a complete archive"
fi
tar -cf "$C/keep.tar" -C "$C" src
cp "$C/keep.tar" "$C/keep.tar.orig"
run_capture corrupt_o "$SQK" tar --no-verify -o "$C/keep.tar" "$C/img.sqsh"
[ "$RC" = 1 ] && ! grep -q "not replaced" "$ERR_FILE" || { show_err; fail "corrupt image with -o: exit $RC"; }
cmp -s "$C/keep.tar" "$C/keep.tar.orig" || fail "a failed -o replaced the older FILE"
rm "$C/keep.tar.orig"
[ "$(ls -A "$C")" = "$(printf 'img.sqsh\nkeep.tar\nsrc')" ] ||
	fail "a failed -o left files behind: $(ls -A "$C" | tr '\n' ' ')"
info "corrupt block: $(grep /d/big "$ERR_FILE")"

# --- a pipe closed early, a terminal, usage ---------------------------------------------------
"$SQK" tar "$IMG" 2>"$W/pipe.err" | head -c 100 >/dev/null
rc=${PIPESTATUS[0]}
[ "$rc" = 1 ] || { cat "$W/pipe.err" >&2; fail "closed pipe: exit $rc (expected 1, no signal)"; }
grep -q 'cannot write the archive to stdout: Broken pipe' "$W/pipe.err" ||
	{ cat "$W/pipe.err" >&2; fail "closed pipe: no message"; }
if command -v script >/dev/null 2>&1; then
	script -qec "$SQK tar $IMG" /dev/null >"$W/tty.out" 2>&1
	rc=$?
	[ "$rc" = 2 ] || fail "stdout on a terminal: exit $rc (expected 2)"
	grep -q 'refusing to write a tar archive to a terminal' "$W/tty.out" ||
		fail "stdout on a terminal: $(head -c 300 "$W/tty.out")"
	[ "$(wc -c <"$W/tty.out")" -lt 400 ] || fail "an archive was written to the terminal"
fi
for args in "" "--bogus $IMG" "$IMG a b" "--offset x $IMG" "--retries 1000 $IMG"; do
	# shellcheck disable=SC2086
	run_capture usage "$SQK" tar $args
	[ "$RC" = 2 ] || fail "sqk tar $args: exit $RC (expected 2)"
done
"$SQK" tar --help | grep -q 'Exit status' || fail "sqk tar --help"
"$SQK" help | grep -q '^  tar ' || fail "sqk help does not list tar"

# --- the sanitized build: a whole archive, a corrupt image, a closed pipe ------------------
if [ -n "${SQK_SAN:-}" ] && [ -x "$SQK_SAN" ]; then
	"$SQK_SAN" tar "$IMG" 2>"$W/san.err" | cmp -s - "$W/all.tar" ||
		{ tail -n 30 "$W/san.err" >&2; fail "SQK_SAN tar differs or failed"; }
	run_capture san_corrupt "$SQK_SAN" tar -z "$C/img.sqsh"
	[ "$RC" = 1 ] && ! grep -q Sanitizer "$ERR_FILE" || { show_err; fail "SQK_SAN corrupt"; }
	"$SQK_SAN" tar "$IMG" 2>"$W/san.err" | head -c 100 >/dev/null
	rc=${PIPESTATUS[0]}
	[ "$rc" = 1 ] && ! grep -q Sanitizer "$W/san.err" ||
		{ tail -n 30 "$W/san.err" >&2; fail "SQK_SAN closed pipe: exit $rc"; }
	info "SQK_SAN: archive identical, corrupt image and closed pipe clean"
fi
exit 0
